import { createHash, randomBytes } from 'node:crypto';

/** A new invitation token: 256 random bits, URL-safe. */
export function newInvitationToken(): string {
  return randomBytes(32).toString('base64url');
}

/** An invitation token is kept only as its SHA-256: with 256 random bits, a slow hash would add nothing. */
export function invitationTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
