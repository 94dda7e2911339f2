import { defineConfig } from 'vitest/config';

/**
 * The cluster tests (`npm run test:cluster`): each file starts a real
 * cluster with `tether cluster up` (PostgreSQL, two Temporal nodes, the UI,
 * three workers, the panel), so files run one at a time. Kept out of
 * vitest.config.ts so a plain `vitest run` stays unit + integration.
 */
export default defineConfig({
  test: {
    name: 'cluster',
    include: ['test/cluster/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 300_000,
  },
});
