import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` needs no server and runs in seconds (`npm run test:unit`);
 * `integration` shares one real Temporal dev server started by the global set-up.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    // Vitest's default, one file fewer than the cores, runs one file at a time on a
    // 2-core machine; the integration files mostly wait on servers and timers, so two
    // at a time halves the suite (1,300 s to 670 s on 2 cores) without starving them.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
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
