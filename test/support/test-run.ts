import { SERVER_URL_VARIABLE, TEMPLATE_VARIABLE, TestDatabaseServer } from './test-database.js';

declare global {
  var hubTestRun: { server: TestDatabaseServer; template: string } | undefined;
}

/** Jest's global setup: reaches (or starts) the run's PostgreSQL server and migrates the template. */
export async function setUpTestRun(): Promise<void> {
  const server = await TestDatabaseServer.start();
  const template = await server.createTemplate();
  globalThis.hubTestRun = { server, template };
  process.env[SERVER_URL_VARIABLE] = server.url;
  process.env[TEMPLATE_VARIABLE] = template;
}
