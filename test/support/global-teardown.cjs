// Stops what global-setup.cjs started; its state lives on globalThis, shared by both hooks.
const { rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

module.exports = async function tearDownTestRun() {
  const run = globalThis.hubTestRun;
  // The run's OpenAPI document, kept by test-hub.ts (runDocument) for the replies' check.
  if (run) rmSync(join(tmpdir(), `hub-openapi-${run.template}.json`), { force: true });
  await run?.server.stop(run.template);
};
