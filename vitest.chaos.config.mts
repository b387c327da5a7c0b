import { defineConfig } from 'vitest/config';

// `npm run test:chaos`: the long fault-injection runs (test/chaos/*.chaos.ts). Each run starts its own
// embedded AWS stack and pipeline processes, so no global setup; one file at a time on this 2-core machine.
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.ts'],
    testTimeout: 420_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
  },
});
