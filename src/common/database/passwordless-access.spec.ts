import { describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { warnIfPasswordless } from './passwordless-access.js';

/** Collects a logger's lines. */
function collectingLogger(): { logger: pino.Logger; lines: { msg: string }[] } {
  const lines: { msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  return { logger, lines };
}

describe('the warning about a database that takes the hub without a password', () => {
  // The run's server: TEST_DATABASE_URL (this machine's trusts every local connection), or the embedded one (scram-sha-256).
  const server = new URL(process.env.HUB_TEST_SERVER_URL as string);
  const trusting = server.password === '';

  (trusting ? it : it.skip)('warns, naming the role, where it got in and the fix, when the server trusts this host', async () => {
    const { logger, lines } = collectingLogger();
    const open = await warnIfPasswordless(server.href, logger);
    expect(open).toContain(`${server.hostname}:${server.port || 5432}`);
    expect(lines).toHaveLength(1);
    expect(lines[0].msg).toContain(`PostgreSQL lets the hub's role '${decodeURIComponent(server.username || 'postgres')}'`);
    expect(lines[0].msg).toContain('Fix: in pg_hba.conf, use scram-sha-256');
  });

  (trusting ? it.skip : it)('says nothing when the server asks for the password', async () => {
    const { logger, lines } = collectingLogger();
    expect(await warnIfPasswordless(server.href, logger)).toEqual([]);
    expect(lines).toEqual([]);
  });

  it('says nothing when nothing listens there', async () => {
    const { logger, lines } = collectingLogger();
    expect(await warnIfPasswordless('postgres://hub@127.0.0.1:9/hub', logger)).toEqual([]);
    expect(lines).toEqual([]);
  });
});
