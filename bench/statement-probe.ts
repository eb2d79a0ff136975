// Loaded into a benchmarked server with `node --import <dist/bench/statement-probe.js>` (the hub or
// bench/bare-server.js alike): how long its statements take from pg's `Client.query` to their
// answer, and how long it waits for a pooled connection. The first SIGUSR2 opens a window, the
// next closes it and appends one JSON line to STATEMENT_PROBE_OUT. This is how the list's p99 was
// traced to the page statement that carried its count (docs/api-conventions.md, "second pass"):
// the hub's event loop was no later than the bare handler's, its statements were.
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type pgTypes from 'pg';

const pg = createRequire(import.meta.url)('pg') as typeof pgTypes;

/** Statements shorter than this many characters (BEGIN, the audit's batches aside) are not counted: the lists' are long. */
const LIST_STATEMENT_MIN_LENGTH = 300;

let open = false;
let statements: number[] = [];
let waits: number[] = [];

const percentile = (values: readonly number[], fraction: number) =>
  Math.round(([...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * fraction))] ?? 0) * 100) / 100;

type Callback = (error: Error | null, ...results: unknown[]) => void;
const query = Reflect.get(pg.Client.prototype, 'query') as (this: pgTypes.Client, ...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pgTypes.Client, ...args: unknown[]): unknown {
  const began = performance.now();
  const [config] = args;
  const text = typeof config === 'string' ? config : ((config as { text?: string } | undefined)?.text ?? '');
  const note = () => {
    if (open && text.length >= LIST_STATEMENT_MIN_LENGTH) statements.push(performance.now() - began);
  };
  const last = args.length - 1;
  if (typeof args[last] === 'function') {
    const callback = args[last] as Callback;
    args[last] = (error: Error | null, ...results: unknown[]) => {
      note();
      callback(error, ...results);
    };
    return query.apply(this, args);
  }
  const answer = query.apply(this, args);
  return answer instanceof Promise ? answer.then((result: unknown) => (note(), result)) : answer;
} as typeof pg.Client.prototype.query;

const connect = Reflect.get(pg.Pool.prototype, 'connect') as (this: pgTypes.Pool, callback?: Callback) => unknown;
pg.Pool.prototype.connect = function (this: pgTypes.Pool, callback?: Callback): unknown {
  const began = performance.now();
  const note = () => open && waits.push(performance.now() - began);
  if (callback)
    // pg-pool answers (error, client, release): all passed on.
    return connect.call(this, (error, ...results) => {
      note();
      callback(error, ...results);
    });
  return (connect.call(this) as Promise<unknown>).then((client) => (note(), client));
} as typeof pg.Pool.prototype.connect;

process.on('SIGUSR2', () => {
  if (!open) {
    open = true;
    statements = [];
    waits = [];
    return;
  }
  open = false;
  const out = process.env.STATEMENT_PROBE_OUT;
  if (!out) return;
  appendFileSync(
    out,
    `${JSON.stringify({
      pid: process.pid,
      statements: statements.length,
      p50Ms: percentile(statements, 0.5),
      p90Ms: percentile(statements, 0.9),
      p99Ms: percentile(statements, 0.99),
      connectionWaits: waits.length,
      waitP99Ms: percentile(waits, 0.99),
    })}\n`,
  );
});
