import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` needs no server and runs in seconds (`npm run test:unit`);
 * `integration` shares one real Temporal dev server started by the global set-up.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts', 'src/**/*.test.ts'], testTimeout: 10_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', 'test/cluster/**'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
