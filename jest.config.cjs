const shared = require('./jest.shared.cjs');

/** Unit specs next to the code, end-to-end specs under test/; every file gets its own database. */
module.exports = {
  ...shared,
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.cjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.cjs',
  maxWorkers: 3,
  testTimeout: 30_000,
};
