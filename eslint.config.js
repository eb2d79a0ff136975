import { readdirSync } from 'node:fs';
import eslint from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The area folders of src/: every folder but common/. */
const AREAS = readdirSync(new URL('./src', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== 'common')
  .map((entry) => entry.name);

/** An area reaches another through its exported service, never its repository or entities. */
const areaBoundaries = AREAS.map((area) => ({
  files: [`src/${area}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: AREAS.filter((other) => other !== area).map((other) => ({
          regex: `(^|/)${other}/(entities/|[^/]+\\.repository\\.js$)`,
          message: `Use the ${other} area's service: a module exports services, never repositories or entities.`,
        })),
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', '.data/', 'bench/results/', 'test/smoke/typed-client/hub-api.d.ts'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs', 'test/smoke/typed-client/*.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
      globals: globals.node,
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-extraneous-class': 'off',
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  ...areaBoundaries,
  {
    // Loading @nestjs/swagger costs the start; its decorators are deferred (src/common/http/openapi-decorators.ts).
    files: ['src/**/*.ts'],
    ignores: ['src/common/http/openapi-decorators.spec.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@nestjs/swagger',
              message: 'Import the OpenAPI decorators from common/http/openapi-decorators.js, which applies them when the document is first wanted.',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/common/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: `(^|/)\\.\\./(${AREAS.join('|')})(/|$)`, message: 'common/ is what the areas stand on: it must not import them.' }] },
      ],
    },
  },
  {
    files: ['test/**/*.ts', '**/*.spec.ts', 'bench/**/*.ts', 'fuzz/**/*.ts'],
    rules: {
      // Replies are parsed JSON: tests, benchmarks and the fuzzer read fields off them freely.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      'no-console': 'off',
    },
  },
  {
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { sourceType: 'commonjs', globals: globals.node, parserOptions: { projectService: false } },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The library worker is a program of its own, run as a job: its standard output and error are its log.
    files: ['src/libraries/worker/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Programs the hub ships for workloads (src/sessions/programs): plain Node.js, run as job users, outside the TypeScript project.
    files: ['src/**/programs/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { sourceType: 'module', globals: globals.node, parserOptions: { projectService: false } },
    rules: { ...tseslint.configs.disableTypeChecked.rules, 'no-console': 'off' },
  },
);
