import { defineConfig } from 'vitest/config';

// `npm run test:browser`: the local dashboard in headless Chromium (Debian's `chromium`; .ci/run installs it
// when missing). Each file starts its own local stack and browser, so no global setup; one file at a time.
export default defineConfig({
  test: {
    include: ['test/browser/**/*.browser.ts'],
    testTimeout: 120_000,
    hookTimeout: 90_000,
    maxWorkers: 1,
  },
});
