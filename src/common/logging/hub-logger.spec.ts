import { describe, expect, it } from '@jest/globals';
import { QueryFailedError } from 'typeorm';
import { createRootLogger } from './hub-logger.js';

function captured(log: (logger: ReturnType<typeof createRootLogger>) => void): string {
  let output = '';
  log(createRootLogger('info', { write: (line: string) => void (output += line) }));
  return output;
}

describe('root logger', () => {
  it('writes JSON lines with an ISO time and a textual level', () => {
    const line = JSON.parse(captured((logger) => logger.info({ requestId: 'r-1' }, 'hello'))) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'info', msg: 'hello', requestId: 'r-1', pid: process.pid });
    expect(line.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('redacts secrets wherever they appear in the first two levels', () => {
    const output = captured((logger) =>
      logger.info(
        { password: 'p1', body: { newPassword: 'p2', token: 'p3' }, req: { headers: { authorization: 'Bearer p4', cookie: 'p5' } }, secret: 'p6' },
        'x',
      ),
    );
    for (const secret of ['p1', 'p2', 'p3', 'p4', 'p5', 'p6']) expect(output).not.toContain(`"${secret}`);
    expect(output).toContain('[redacted]');
  });

  it("keeps a failed query's bound values out of the log, but not its SQL", () => {
    const error = new QueryFailedError('INSERT INTO users (password_hash) VALUES ($1)', ['$argon2id$secret-hash'], new Error('boom'));
    const output = captured((logger) => logger.error({ err: error }, 'Request failed'));
    expect(output).not.toContain('secret-hash');
    expect(output).toContain('INSERT INTO users');
  });
});
