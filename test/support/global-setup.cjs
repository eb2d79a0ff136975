// Jest compiles its global setup to CommonJS and loads it outside its own module system, where
// moduleNameMapper does not apply. While the setup loads, a relative `./x.js` that does not exist
// resolves to `./x.ts` (as the build and the test workers resolve it), so the setup uses the hub's
// own code to start PostgreSQL and migrate.
const Module = require('node:module');

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function resolveTypeScript(request, ...rest) {
  try {
    return resolveFilename.call(this, request, ...rest);
  } catch (error) {
    if (!/^\.\.?\/.*\.js$/.test(request)) throw error;
    return resolveFilename.call(this, request.replace(/\.js$/, '.ts'), ...rest);
  }
};

try {
  module.exports = require('./test-run.ts').setUpTestRun;
} finally {
  Module._resolveFilename = resolveFilename;
}
