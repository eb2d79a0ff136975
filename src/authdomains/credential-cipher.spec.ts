import { describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import type { HubConfig } from '../common/config/hub-config.js';
import { StartupError } from '../common/errors/startup-error.js';
import { CredentialCipher, UnreadableCredentialError } from './credential-cipher.js';
import { CredentialKeyCheck } from './credential-key-check.js';

const cipherWith = (key: Buffer) => new CredentialCipher({ credentialsKey: key, dataDir: '/nonexistent' } as unknown as HubConfig);

describe('CredentialCipher', () => {
  const cipher = cipherWith(randomBytes(32));
  const id = randomUUID();

  it('opens what it sealed, and seals the same data differently each time', () => {
    const data = { user: 'etl', password: 'pässwörd ✓' };
    const first = cipher.seal(id, data);
    const second = cipher.seal(id, data);
    expect(cipher.open(id, first)).toEqual(data);
    expect(first.equals(second)).toBe(false);
    expect(first.toString('utf8')).not.toContain('etl');
  });

  it('does not open a value sealed for another credential', () => {
    expect(() => cipher.open(randomUUID(), cipher.seal(id, { a: 'b' }))).toThrow(UnreadableCredentialError);
  });

  it('does not open an altered value, a truncated one or one of another format', () => {
    const sealed = cipher.seal(id, { a: 'b' });
    const altered = Buffer.from(sealed);
    altered[20] ^= 1;
    expect(() => cipher.open(id, altered)).toThrow(UnreadableCredentialError);
    expect(() => cipher.open(id, sealed.subarray(0, 20))).toThrow(UnreadableCredentialError);
    expect(() => cipher.open(id, Buffer.concat([Buffer.of(2), sealed.subarray(1)]))).toThrow(UnreadableCredentialError);
  });

  it('does not open a value sealed under another key', () => {
    expect(() => cipherWith(randomBytes(32)).open(id, cipher.seal(id, { a: 'b' }))).toThrow(/cannot be opened with this HUB_CREDENTIALS_KEY/);
  });

  it('generates a key in the data directory when none is configured, and reuses it', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hub-cipher-'));
    try {
      const config = { dataDir } as unknown as HubConfig;
      const sealed = new CredentialCipher(config).seal(id, { a: 'b' });
      expect(Buffer.from(readFileSync(join(dataDir, 'credentials.key'), 'utf8').trim(), 'base64url')).toHaveLength(32);
      expect(new CredentialCipher(config).open(id, sealed)).toEqual({ a: 'b' });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('CredentialKeyCheck', () => {
  const key = randomBytes(32);
  const id = randomUUID();
  const stored = (rows: { id: string; sealedData: Buffer }[]) => ({ query: () => Promise.resolve(rows) }) as unknown as DataSource;

  it('lets the hub start when nothing is stored, or when the key opens what is', async () => {
    await expect(new CredentialKeyCheck(stored([]), cipherWith(key)).onApplicationBootstrap()).resolves.toBeUndefined();
    const rows = [{ id, sealedData: cipherWith(key).seal(id, { a: 'b' }) }];
    await expect(new CredentialKeyCheck(stored(rows), cipherWith(key)).onApplicationBootstrap()).resolves.toBeUndefined();
  });

  it('stops the start with a message naming the setting when the key does not open what is stored', async () => {
    const rows = [{ id, sealedData: cipherWith(key).seal(id, { a: 'b' }) }];
    const check = new CredentialKeyCheck(stored(rows), cipherWith(randomBytes(32))).onApplicationBootstrap();
    await expect(check).rejects.toThrow(StartupError);
    await expect(new CredentialKeyCheck(stored(rows), cipherWith(randomBytes(32))).onApplicationBootstrap()).rejects.toThrow(/HUB_CREDENTIALS_KEY/);
  });
});
