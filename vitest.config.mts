import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One embedded AWS stack (fauxqs + dynalite) for the whole run; tests read its endpoints via inject().
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // 2-core machine: bounded parallelism keeps timing-sensitive suites honest.
    maxWorkers: 2,
  },
});
