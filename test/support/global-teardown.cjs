// Stops what global-setup.cjs started; its state lives on globalThis, shared by both hooks.
module.exports = async function tearDownTestRun() {
  const run = globalThis.hubTestRun;
  await run?.server.stop(run.template);
};
