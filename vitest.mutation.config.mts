import { defineConfig } from 'vitest/config';

/**
 * `MUTATION_TESTS` (comma-separated globs) narrows the run to the tests that exercise the file being
 * mutated, e.g. `MUTATION_TESTS='test/unit/ingest/handler/invocation-metrics.test.ts'`; a mutant one of
 * them does not kill counts as survived, so a narrow list gives a lower bound of the full config's score.
 * Unset: the full list below.
 */
const narrowed = (process.env.MUTATION_TESTS ?? '').split(',').filter(Boolean);

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
    exclude: ['test/integration/semaphore/processes.test.ts', 'test/unit/architecture/**'],
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
