// The launch side of a service endpoint on a cluster node (api-map §9), shipped with the hub and
// run by a service job's own launch, on its node, as its user, just before the service's program:
// picks a port free on the node's address, writes `host:port` into the execution's directory (the
// parent of the working directory the job starts in, which only the job's user and the hub can
// enter), where the hub reads it, and prints the two variables for the shell that then runs the
// service with them (service-endpoints.ts builds that shell line).
//
// Run as `service-port.mjs <host variable> <port variable>`. Node.js's standard library only.
import { lookup } from 'node:dns/promises';
import { rename, writeFile } from 'node:fs/promises';
import { createServer, isIP } from 'node:net';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';

const NAME = /^[A-Z_][A-Z0-9_]*$/;
const [hostVariable, portVariable] = process.argv.slice(2);
if (!NAME.test(hostVariable ?? '') || !NAME.test(portVariable ?? '')) {
  console.error('usage: service-port.mjs <host variable> <port variable>');
  process.exit(2);
}

/** The node's address as its own name resolves (IPv4 first): the one the hub reaches it at, which the hub checks. */
async function nodeAddress() {
  try {
    return (await lookup(hostname(), { family: 4 })).address;
  } catch {
    return (await lookup(hostname())).address;
  }
}

const host = await nodeAddress();
const port = await new Promise((resolve, reject) => {
  const server = createServer();
  server.once('error', reject);
  server.listen(0, host, () => {
    const address = server.address();
    server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
  });
});
if (isIP(host) === 0 || !Number.isInteger(port) || port <= 0) {
  console.error(`service-port.mjs: no usable endpoint (${host}:${port})`);
  process.exit(1);
}
// Whole or not at all: the hub may read it at any moment.
const file = join(dirname(process.cwd()), 'endpoint');
await writeFile(`${file}.tmp`, `${isIP(host) === 6 ? `[${host}]` : host}:${port}\n`, { mode: 0o600 });
await rename(`${file}.tmp`, file);
process.stdout.write(`${hostVariable}=${host}\n${portVariable}=${port}\n`);
