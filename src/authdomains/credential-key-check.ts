import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { StartupError } from '../common/errors/startup-error.js';
import { CredentialCipher, UnreadableCredentialError } from './credential-cipher.js';

/**
 * At start: the credentials key must open what is stored. Started with another key (a lost data
 * directory, a replica without HUB_CREDENTIALS_KEY), the hub would seal new secrets under a key
 * the others do not have and fail every resolve; it refuses to start instead, naming the setting.
 */
@Injectable()
export class CredentialKeyCheck implements OnApplicationBootstrap {
  constructor(
    private readonly dataSource: DataSource,
    private readonly cipher: CredentialCipher,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const rows: { id: string; sealedData: Buffer }[] = await this.dataSource.query(
      'SELECT id, sealed_data AS "sealedData" FROM credentials WHERE sealed_data IS NOT NULL ORDER BY created DESC LIMIT 1',
    );
    if (rows.length === 0) return;
    try {
      this.cipher.open(rows[0].id, rows[0].sealedData);
    } catch (error) {
      if (!(error instanceof UnreadableCredentialError)) throw error;
      throw new StartupError(
        'The credentials key does not open the stored credentials: set HUB_CREDENTIALS_KEY to the key they were sealed with (or restore HUB_DATA_DIR/credentials.key)',
      );
    }
  }
}
