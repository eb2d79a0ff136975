const shared = require('./jest.shared.cjs');

/** Smoke specs run the built hub (dist/) as a real process on its embedded PostgreSQL. */
module.exports = {
  ...shared,
  roots: ['<rootDir>/test/smoke'],
  testMatch: ['**/*.smoke-spec.ts'],
  maxWorkers: 1,
  testTimeout: 120_000,
};
