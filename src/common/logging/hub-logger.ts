import { fstatSync } from 'node:fs';
import type { LoggerService } from '@nestjs/common';
import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config/hub-config.js';

/** Fields never written to a log line, wherever they appear in the first two levels. */
const SECRET_FIELDS = ['authorization', 'cookie', 'password', 'currentPassword', 'newPassword', 'token', 'accessToken', 'invitationToken', 'secret'];
const SECRETS = new Set(SECRET_FIELDS);
const CENSOR = '[redacted]';
/**
 * The first level is pino's `redact`, which then only looks at a line that has such a key. The
 * second (`*.password`) is {@link censorSecondLevel}: given to pino as `*.field` paths, a wildcard
 * redactor runs on every value of every line and parses its paths on each call (@pinojs/redact
 * 0.4), 30 KB of garbage per request's log line.
 */
const REDACTED_PATHS = ['req.headers.authorization', 'req.headers.cookie', ...SECRET_FIELDS];

/** `value` with its own secret fields censored: `value` itself when it has none, as nearly always. */
function censoredFields(value: object): object {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) if (SECRETS.has(key)) (copy ??= { ...value } as Record<string, unknown>)[key] = CENSOR;
  return copy ?? value;
}

/**
 * A line's secrets one level down: an object value holding a secret field is replaced by a copy
 * with it censored; the line itself is copied only then. Arrays and byte buffers are not looked
 * into, as pino's `*.field` did not. `err` is pino's error serializer's to shape (it needs the
 * Error itself): {@link serializeError} censors its output. A child logger's bindings are censored
 * at their first level only (pino applies no formatter to them): the hub binds names and ids.
 */
export function censorSecondLevel(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in object) {
    const value = object[key];
    if (key === 'err' || typeof value !== 'object' || value === null || Array.isArray(value) || ArrayBuffer.isView(value)) continue;
    const censored = censoredFields(value);
    if (censored !== value) (copy ??= { ...object })[key] = censored;
  }
  return copy ?? object;
}

/**
 * A class's name as its source writes it. The bundle (scripts/bundle.mjs) writes some classes as
 * `var X = class _X`, to keep a name the class's own body uses, and those are named `_X` at run
 * time; log lines name classes (an error's type, Nest's contexts), which read as the source does.
 */
function sourceName(name: string): string {
  return name.startsWith('_') ? name.slice(1) : name;
}

/** Errors as pino writes them, less a failed query's bound values (password hashes, credential data) and any secret field. */
function serializeError(error: Error): Record<string, unknown> {
  const { parameters: _parameters, ...serialized } = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  if (typeof serialized.type === 'string') serialized.type = sourceName(serialized.type);
  return censoredFields(serialized) as Record<string, unknown>;
}

/** Log lines held while their file refuses them (a full disk), before newer ones are dropped. */
const HELD_LOG_BYTES = 16 * 1024 * 1024;

/**
 * Where the hub writes its log (standard output), so that a full disk never ends the hub: a write
 * that fails leaves its lines held (up to HELD_LOG_BYTES; newer ones are then dropped) and tried
 * again with the next line, where pino's own stream would throw its 'error' event, unhandled. A
 * regular file (which a full disk refuses) is written synchronously: pino flushes an asynchronous
 * stream at exit with a loop that retries a refused write forever. So is a character device (a
 * terminal, /dev/null): an asynchronous write is a trip through libuv's thread pool, and waking a
 * pool thread for every line took the hub's CPU from its requests on a busy machine (a list
 * request's p99, docs/api-conventions.md), where writing a line to a device costs microseconds.
 * Pipes and sockets, which a slow reader can fill, keep the asynchronous stream.
 */
export function logDestination(fd = 1): pino.DestinationStream {
  let sync = false;
  try {
    const stat = fstatSync(fd);
    sync = stat.isFile() || stat.isCharacterDevice();
  } catch {
    // Closed: pino's stream reports it.
  }
  const stream = pino.destination({ dest: fd, sync, maxLength: HELD_LOG_BYTES });
  stream.on('error', () => undefined);
  return stream;
}

/** The process's root logger: JSON lines with ISO timestamps and textual levels, secrets redacted. */
export function createRootLogger(level: LogLevel, destination: pino.DestinationStream = logDestination()): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: censorSecondLevel },
      redact: { paths: REDACTED_PATHS, censor: CENSOR },
      serializers: { err: serializeError },
    },
    destination,
  );
}

/** Injectable handle on the root logger; areas log through a child named after themselves. */
export class HubLogger {
  constructor(readonly root: Logger) {}

  for(context: string): Logger {
    return this.root.child({ context });
  }
}

/**
 * Nest's start-up chatter (one line per module and route) is debug detail, not news; and a
 * failed start is reported by `main`, so Nest's own report of it would say it twice.
 */
const QUIET_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication', 'ExceptionHandler']);

/** Routes Nest's own log calls (`message, ...params, context`) to pino. */
export class NestLoggerAdapter implements LoggerService {
  constructor(private readonly logger: Logger) {}

  private write(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', message: unknown, params: unknown[]): void {
    // Nest names a logger's context after its class.
    const context = typeof params.at(-1) === 'string' ? sourceName(params.pop() as string) : undefined;
    const stack = typeof params[0] === 'string' ? params[0] : undefined;
    const effective = context && QUIET_CONTEXTS.has(context) && (level === 'info' || level === 'error') ? 'debug' : level;
    const fields = { context, ...(stack ? { stack } : {}) };
    if (message instanceof Error) this.logger[effective]({ ...fields, err: message }, message.message);
    else this.logger[effective](fields, typeof message === 'string' ? message : JSON.stringify(message));
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }
}
