import { writeFileSync } from 'node:fs';
import { startHub } from './hub-process.js';

/**
 * Writes the built hub's OpenAPI document to the file given (for the linters and the typed client
 * in CI): `node dist/fuzz/document.js out.json`. PostgreSQL: TEST_DATABASE_URL (a server: a database is made there), or embedded.
 */
async function main(): Promise<void> {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node dist/fuzz/document.js <file>');
  const hub = await startHub(process.env.TEST_DATABASE_URL);
  try {
    const response = await fetch(`${hub.url}/api/openapi.json`);
    if (response.status !== 200) throw new Error(`GET /api/openapi.json answered ${response.status}`);
    writeFileSync(out, `${JSON.stringify(await response.json(), null, 2)}\n`);
  } finally {
    await hub.stop();
  }
}

await main();
