import { defineConfig } from 'vitest/config';

// `npm run test:at-size`: the local pipeline at the sizes a user tries (thousands of messages, large batches,
// several containers on few tenants), where write races between containers are frequent. Each run starts its
// own embedded stack, so no global setup; one file at a time on this 2-core machine. `.ci/run` runs it.
export default defineConfig({
  test: {
    include: ['test/at-size/**/*.at-size.ts'],
    testTimeout: 600_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
  },
});
