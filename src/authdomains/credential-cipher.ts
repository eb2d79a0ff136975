import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { HubConfig, parseKey256 } from '../common/config/hub-config.js';
import { readOrCreateSecretFile } from '../common/config/secret-file.js';
import { StartupError } from '../common/errors/startup-error.js';

const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The key kept in the data directory (generated on first use), in any form HUB_CREDENTIALS_KEY takes. */
function keyFromFile(file: string): Buffer {
  const key = parseKey256(readOrCreateSecretFile(file));
  if (!key) throw new StartupError(`${file} does not hold a 256-bit key (64 hexadecimal digits or 32 bytes in base64)`);
  return key;
}

/** A sealed value that the key cannot open: another key sealed it, or it was altered. */
export class UnreadableCredentialError extends Error {
  override readonly name = 'UnreadableCredentialError';
}

/**
 * Seals credential data with AES-256-GCM under HUB_CREDENTIALS_KEY (or a key generated once in
 * the data directory). A sealed value is a format byte, a random 96-bit nonce, the ciphertext and
 * the 128-bit tag. The credential's id is the associated data, so a sealed value copied onto
 * another credential does not open.
 */
@Injectable()
export class CredentialCipher {
  private readonly key: Buffer;

  constructor(config: HubConfig) {
    this.key = config.credentialsKey ?? keyFromFile(join(config.dataDir, 'credentials.key'));
  }

  seal(credentialId: string, data: Readonly<Record<string, string>>): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(credentialId, 'utf8'));
    const body = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(FORMAT), iv, body, cipher.getAuthTag()]);
  }

  open(credentialId: string, sealed: Buffer): Record<string, string> {
    if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== FORMAT)
      throw new UnreadableCredentialError(`Credential ${credentialId}: unknown sealed format`);
    const iv = sealed.subarray(1, 1 + IV_BYTES);
    const tag = sealed.subarray(sealed.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(credentialId, 'utf8'));
    decipher.setAuthTag(tag);
    try {
      const text = Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      return JSON.parse(text) as Record<string, string>;
    } catch {
      throw new UnreadableCredentialError(`Credential ${credentialId} cannot be opened with this HUB_CREDENTIALS_KEY`);
    }
  }
}
