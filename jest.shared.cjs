// Jest runs in native-ESM mode (Nest 12 packages are ESM-only) with SWC compiling TypeScript the
// way the build does: legacy decorators with metadata, no define semantics for class fields.
const swc = (type) => [
  '@swc/jest',
  {
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      keepClassNames: true,
    },
    module: { type },
  },
];

module.exports = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': swc('es6'),
    // ESM-only packages that CommonJS packages require(), which Jest cannot do on Node 20: cookie
    // (by light-my-request, behind app.inject) and content-disposition (by @fastify/static, which
    // serves the OpenAPI UI). They alone are compiled to CommonJS.
    '/node_modules/(cookie|content-disposition)/.+\\.js$': swc('commonjs'),
  },
  transformIgnorePatterns: ['/node_modules/(?!(cookie|content-disposition)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};
