import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeDirectory } from '../data-location.js';

function readSecret(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Reads a secret kept in a file of the data directory, creating it (random, readable by the owner
 * only) on first use. Used for values the operator may leave unset, such as the JWT secret. When
 * two processes create it at once, the first one written wins and both use it.
 */
export function readOrCreateSecretFile(file: string, bytes = 32): string {
  const existing = readSecret(file);
  if (existing) return existing;
  // Every secret file is in the data directory.
  makeDirectory(dirname(file), 'HUB_DATA_DIR');
  try {
    writeFileSync(file, `${randomBytes(bytes).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const secret = readSecret(file);
  if (!secret) throw new Error(`The secret file ${file} is empty`);
  return secret;
}
