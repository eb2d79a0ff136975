import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { argon2id, hash, verify } from 'argon2';

/** OWASP's argon2id baseline: 19 MiB, two passes, one lane (about 20 ms here). */
const OPTIONS = { type: argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

@Injectable()
export class PasswordHasher {
  private dummyHash?: Promise<string>;

  hash(password: string): Promise<string> {
    return hash(password, OPTIONS);
  }

  /**
   * Checks a password against a stored hash. Without one (no such user, no password yet) it still
   * spends the time of a real check, so that timing does not tell which user names exist.
   */
  async verify(storedHash: string | null, password: string): Promise<boolean> {
    const target = storedHash ?? (await (this.dummyHash ??= this.hash(randomBytes(16).toString('hex'))));
    try {
      return (await verify(target, password)) && storedHash !== null;
    } catch {
      return false;
    }
  }
}
