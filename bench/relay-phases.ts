// Loaded into a relaying process (the hub, or bench/bare-relay.ts) with `node --import
// <dist/bench/relay-phases.js>`: each request for records split, from inside that process, into
// what comes before its request to the worker, the wait for the worker's reply, and what comes
// after it, through node:http's diagnostics channels (no change to the code measured). On exit, it
// writes `<tmpdir>/relay-phases-<pid>.json`: the medians of the three, and of their sum.
// bench/libraries.ts loads it with BENCH_HUB_NODE_ARGS and BENCH_RELAY_NODE_ARGS.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Phases {
  readonly began: number;
  sent?: number;
  replied?: number;
  ended?: number;
}

const finished: Phases[] = [];
/**
 * The records request under way, alone: the next request to a worker is its. One that overlaps
 * another (the benchmark's concurrent clients) is not counted: which worker request is whose is
 * then unknown.
 */
let current: { request: IncomingMessage; phases: Phases } | undefined;
let underWay = 0;

subscribe('http.server.request.start', (message) => {
  const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
  if (!request.url?.includes('/records')) return;
  underWay++;
  // The reply's close, not the request's: a request whose body has been read is closed at once.
  response.once('close', () => underWay--);
  current = underWay === 1 ? { request, phases: { began: performance.now() } } : undefined;
});
subscribe('http.client.request.start', (message) => {
  const phases = current?.phases;
  if (!phases || phases.sent !== undefined) return;
  phases.sent = performance.now();
  (message as { request: ClientRequest }).request.once('response', (reply: IncomingMessage) => reply.once('end', () => (phases.replied = performance.now())));
});
subscribe('http.server.response.finish', (message) => {
  const { request } = message as { request: IncomingMessage };
  if (current?.request !== request || underWay !== 1) return;
  current.phases.ended = performance.now();
  finished.push(current.phases);
  current = undefined;
});

const median = (values: number[]) => Math.round([...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] * 1000) / 1000;

process.on('exit', () => {
  const whole = finished.filter((phases) => phases.replied !== undefined && phases.ended !== undefined) as Required<Phases>[];
  if (whole.length === 0) return;
  writeFileSync(
    join(tmpdir(), `relay-phases-${process.pid}.json`),
    `${JSON.stringify({
      requests: whole.length,
      beforeWorkerMs: median(whole.map((p) => p.sent - p.began)),
      workerMs: median(whole.map((p) => p.replied - p.sent)),
      afterWorkerMs: median(whole.map((p) => p.ended - p.replied)),
      inAllMs: median(whole.map((p) => p.ended - p.began)),
    })}\n`,
  );
});
// A process without a SIGTERM handler of its own (the bare relay) would die without 'exit'; the hub's own handler ends it.
process.on('SIGTERM', () => {
  if (process.listenerCount('SIGTERM') === 1) process.exit(0);
});
