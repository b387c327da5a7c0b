import { defineConfig } from 'vitest/config';

/**
 * `MUTATION_TESTS=test/unit/pool/**,test/unit/db/pool-integration.test.ts` narrows the run to the tests
 * that exercise the one file being mutated (comma-separated globs): a mutant then costs a few seconds, not
 * the whole suite's run. Unset, the default list below applies.
 */
const narrowed = (process.env.MUTATION_TESTS ?? '')
  .split(',')
  .map((glob) => glob.trim())
  .filter(Boolean);
/**
 * `MUTATION_ISOLATE=false` runs every test file of a mutant in one reused worker instead of a fresh one per
 * file (about 1 s of startup each on this machine): for a narrowed list whose files restore what they
 * change (fake timers, env). Unset, files stay isolated.
 */
const isolate = process.env.MUTATION_ISOLATE !== 'false';

/**
 * The tests Stryker runs against each mutant (`npm run test:mutation`): unit tests plus the integration
 * tests of the semaphore, the database and the handler, which need the embedded stack (fauxqs + dynalite)
 * started once by the global setup. The CLI, package, chaos and multi-process suites are left out: they
 * spawn processes (Stryker's per-test coverage cannot see into them) and would only slow every mutant.
 */
export default defineConfig({
  test: {
    include:
      narrowed.length > 0
        ? narrowed
        : [
            'test/unit/**/*.test.ts',
            'test/integration/semaphore/*.test.ts',
            'test/integration/db/*.test.ts',
            'test/integration/ingest/*.test.ts',
          ],
    exclude: ['test/integration/semaphore/rate-budget-processes.test.ts', 'test/unit/architecture/**'],
    isolate,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    maxWorkers: 2,
    // Stryker aborts when its first (unmutated) run has a failing test; on a loaded machine a few tests
    // with wall-clock bounds (stall and deadline budgets) can miss them once. A retry keeps the baseline
    // green without hiding a mutant: a killed mutant fails every attempt.
    retry: 2,
  },
});
