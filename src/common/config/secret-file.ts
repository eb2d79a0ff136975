import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Reads a secret kept in a file of the data directory, creating it (random, readable by the owner
 * only) on first use. Used for values the operator may leave unset, such as the JWT secret.
 */
export function readOrCreateSecretFile(file: string, bytes = 32): string {
  try {
    const secret = readFileSync(file, 'utf8').trim();
    if (secret) return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(bytes).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
