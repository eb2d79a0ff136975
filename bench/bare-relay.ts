// The floor of bench/libraries.ts's records through the hub: a relay with nothing of the hub's,
// node:http in and out, that forwards each request's method, path and body to the library worker
// named by WORKER_HOST, WORKER_PORT and WORKER_SECRET (over a keep-alive agent, as the hub's
// WorkerClient does) and answers with the worker's status and bytes. No authentication, no access
// decision, no framework: what any relay through a second process costs on this machine, so that
// the hub's own share of a page is the hub's time less this one's.
import { Agent, createServer, request } from 'node:http';

const agent = new Agent({ keepAlive: true });
const worker = { host: process.env.WORKER_HOST, port: Number(process.env.WORKER_PORT), secret: process.env.WORKER_SECRET ?? '' };

createServer((incoming, outgoing) => {
  if (incoming.url === '/health') {
    outgoing.end('ok');
    return;
  }
  const body: Buffer[] = [];
  incoming.on('data', (chunk: Buffer) => body.push(chunk));
  incoming.on('end', () => {
    const payload = Buffer.concat(body);
    const forwarded = request(
      {
        host: worker.host,
        port: worker.port,
        method: incoming.method,
        path: incoming.url,
        agent,
        headers: { 'x-hub-service-secret': worker.secret, 'content-type': 'application/json', 'content-length': String(payload.length) },
      },
      (reply) => {
        const chunks: Buffer[] = [];
        reply.on('data', (chunk: Buffer) => chunks.push(chunk));
        reply.on('end', () => {
          const bytes = Buffer.concat(chunks);
          outgoing.writeHead(reply.statusCode ?? 502, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
          outgoing.end(bytes);
        });
      },
    );
    forwarded.on('error', (error) => outgoing.writeHead(502).end(error.message));
    forwarded.end(payload);
  });
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
