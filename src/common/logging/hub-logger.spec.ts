import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { QueryFailedError } from 'typeorm';
import { createRootLogger, logDestination, NestLoggerAdapter } from './hub-logger.js';

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

  it("redacts secrets in a child logger's bindings, in an error's fields and one level down, and leaves the rest of a line as it was", () => {
    const error = Object.assign(new Error('refused'), { token: 'p9', code: 'E_REFUSED' });
    const fields = { body: { name: 'kept', password: 'p8' }, list: [{ token: 'in an array' }], plain: { name: 'also kept' } };
    const lines = captured((logger) => {
      logger.child({ token: 'p6', requestId: 'r-2' }).info(fields, 'x');
      logger.error({ err: error }, 'failed');
    })
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      token: '[redacted]',
      requestId: 'r-2',
      body: { name: 'kept', password: '[redacted]' },
      list: [{ token: 'in an array' }],
      plain: { name: 'also kept' },
    });
    expect(lines[1]).toMatchObject({ err: { message: 'refused', code: 'E_REFUSED', token: '[redacted]' } });
    expect(lines[1].err).toHaveProperty('stack');
    // The caller's objects are never changed by a line's censoring.
    expect(fields.body.password).toBe('p8');
    expect(error.token).toBe('p9');
  });

  it("keeps a failed query's bound values out of the log, but not its SQL", () => {
    const error = new QueryFailedError('INSERT INTO users (password_hash) VALUES ($1)', ['$argon2id$secret-hash'], new Error('boom'));
    const output = captured((logger) => logger.error({ err: error }, 'Request failed'));
    expect(output).not.toContain('secret-hash');
    expect(output).toContain('INSERT INTO users');
  });
});

describe('class names in log lines', () => {
  it("names an error's type as its source does, the bundle's leading underscore taken off", () => {
    // As the bundle writes some classes: `var Refused = class _Refused`.
    const Refused = class _Refused extends Error {};
    const line = JSON.parse(captured((logger) => logger.error({ err: new Refused('no') }, 'failed'))) as { err: { type: string; message: string } };
    expect(line.err).toMatchObject({ type: 'Refused', message: 'no' });
  });
});

describe("Nest's own lines", () => {
  it('quietens its start-up chatter to debug, its context named as in the bundle (a leading underscore) or not, and keeps its other lines', () => {
    const lines = captured((logger) => {
      const nest = new NestLoggerAdapter(logger);
      nest.log('Mapped {/api/v2/auth/me/password, PUT} route', '_RouterExplorer');
      nest.log('AppModule dependencies initialized', 'InstanceLoader');
      nest.warn('Something Nest says', '_NestApplication');
      nest.log('A line of its own', 'Custom');
    })
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', context: 'NestApplication', msg: 'Something Nest says' }),
      expect.objectContaining({ level: 'info', context: 'Custom', msg: 'A line of its own' }),
    ]);
  });
});

describe('how the log is written', () => {
  it('writes each line as it is made to a character device (a terminal, /dev/null), as to a file: no trip through the thread pool', () => {
    const fd = openSync('/dev/null', 'w');
    try {
      expect((logDestination(fd) as unknown as { sync: boolean }).sync).toBe(true);
    } finally {
      closeSync(fd);
    }
  });
});

describe('the log on a full disk', () => {
  const asRoot = process.getuid?.() === 0 ? it : it.skip;

  it('drops what a device refuses (ENOSPC) and the process lives on', async () => {
    const fd = openSync('/dev/full', 'w');
    try {
      const logger = createRootLogger('info', logDestination(fd));
      for (let i = 0; i < 1000; i++) logger.info({ i }, 'a line the disk refuses');
      // An unhandled 'error' event of the stream would fail this file from the write's callback.
      await new Promise((resolve) => setTimeout(resolve, 200));
      logger.info('still here');
    } finally {
      closeSync(fd);
    }
  });

  asRoot('holds the lines a full filesystem refuses, and writes them once there is room again', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hub-log-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]);
    try {
      const filler = join(dir, 'filler');
      // As much as it takes: the write stops where the filesystem does.
      try {
        writeFileSync(filler, Buffer.alloc(2 * 1024 * 1024));
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      const fd = openSync(join(dir, 'hub.log'), 'a');
      const logger = createRootLogger('info', logDestination(fd));
      expect(() => logger.info('refused')).not.toThrow();
      rmSync(filler);
      logger.info('written');
      closeSync(fd);
      expect(readFileSync(join(dir, 'hub.log'), 'utf8')).toMatch(/"msg":"refused".*\n.*"msg":"written"/s);
    } finally {
      execFileSync('umount', [dir]);
      rmdirSync(dir);
    }
  });
});
