import { setFlagsFromString } from 'node:v8';

/**
 * The hub's process is a server: most of what it allocates lives for one request. V8 allocates
 * straight into the old generation from any allocation site whose objects were mostly alive at a
 * scavenge ("pretenuring"), and under ten concurrent requests the sites of a request's own objects
 * qualify now and then (all in flight when the collector runs). From then on each request leaves
 * old objects that hold its young ones (rows, replies) alive through every scavenge until a
 * mark-compact: on the namespaces list at ten connections, 17-18 KB promoted per request in the
 * runs where it happened against 1.2-1.3 KB with pretenuring off, scavenge pauses of 60-80 ms per
 * 1,000 requests against 15-30 (docs/api-conventions.md). Imported first by `main`, so that it is
 * set before the hub serves anything (the flag is read at each scavenge).
 */
setFlagsFromString('--no-allocation-site-pretenuring');
