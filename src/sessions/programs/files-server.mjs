// The `files` link session's server, shipped with the hub (api-map §8, §9): it serves the session's
// working directory over HTTP, a listing at `/` (and at every directory), files below. It runs as
// the session's owner, listens on $HUB_SESSION_HOST:$HUB_SESSION_PORT (127.0.0.1 on the local
// driver, the node's address on Slurm), and answers nothing to a request without the session's
// secret in X-Hub-Service-Secret: other jobs on the node can reach the port, only the hub's proxy
// knows the secret. Node.js's standard library only: nothing to install.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { opendir, realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { relative, resolve, sep } from 'node:path';

const port = Number(process.env.HUB_SESSION_PORT);
const secret = process.env.HUB_SESSION_SECRET ?? '';
if (!Number.isInteger(port) || port <= 0 || secret === '') {
  console.error('HUB_SESSION_PORT and HUB_SESSION_SECRET must be set');
  process.exit(2);
}
const root = await realpath(process.cwd());
const digest = (value) => createHash('sha256').update(value).digest();
const secretDigest = digest(secret);
/** The most entries a listing shows. */
const MAX_ENTRIES = 10000;

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function refuse(response, status, message) {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  response.end(`${message}\n`);
}

async function listing(response, directory, urlPath) {
  const names = [];
  for await (const entry of await opendir(directory)) {
    names.push(entry.isDirectory() ? `${entry.name}/` : entry.name);
    if (names.length >= MAX_ENTRIES) break;
  }
  names.sort();
  const base = urlPath.endsWith('/') ? '' : `${urlPath.split('/').pop()}/`;
  const items = names.map(
    (name) => `<li><a href="${escapeHtml(base + encodeURIComponent(name.replace(/\/$/, '')) + (name.endsWith('/') ? '/' : ''))}">${escapeHtml(name)}</a></li>`,
  );
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(`<!doctype html><title>${escapeHtml(urlPath)}</title><ul>\n${items.join('\n')}\n</ul>\n`);
}

const server = createServer(async (request, response) => {
  const given = request.headers['x-hub-service-secret'];
  if (typeof given !== 'string' || !timingSafeEqual(digest(given), secretDigest)) return refuse(response, 403, 'Forbidden');
  if (request.method !== 'GET' && request.method !== 'HEAD') return refuse(response, 405, 'Only GET and HEAD');
  let urlPath;
  try {
    urlPath = decodeURIComponent(new URL(request.url ?? '/', 'http://session').pathname);
  } catch {
    return refuse(response, 400, 'Bad path');
  }
  if (urlPath.includes('\0')) return refuse(response, 400, 'Bad path');
  try {
    // Confined to the working directory, links included: what a path resolves to must lie inside it.
    const target = await realpath(resolve(root, `.${urlPath}`));
    const inside = relative(root, target);
    if (inside === '..' || inside.startsWith(`..${sep}`)) return refuse(response, 404, 'Not found');
    const info = await stat(target);
    if (info.isDirectory()) return await listing(response, target, urlPath);
    if (!info.isFile()) return refuse(response, 404, 'Not found');
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': info.size });
    if (request.method === 'HEAD') return response.end();
    createReadStream(target)
      .on('error', () => response.destroy())
      .pipe(response);
  } catch {
    refuse(response, 404, 'Not found');
  }
});

const host = process.env.HUB_SESSION_HOST || '127.0.0.1';
server.listen(port, host, () => console.log(`files server listening on ${host}:${port}`));
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
