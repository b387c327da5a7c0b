// Mutation testing of the core modules. `npm run test:mutation` runs every module below;
// `npm run test:mutation -- semaphore` (or pool, db, handler, message, dlq) runs one. Both it and the per-file
// script run Stryker in a copy of the project whose `Stryker disable` comments are inert, then print each
// file's raw score (no disables) next to the reported one (docs/mutation.md). The JSON report is
// reports/mutation/mutation.json.
//
// One file at a time, against only the tests that exercise it (minutes instead of hours; a lower bound):
//   bash scripts/mutation/file.sh lib/pool/executor-pool.ts 'test/unit/pool/**/*.test.ts'
// (MUTATION_TESTS and MUTATION_ISOLATE are read by vitest.mutation.config.mts.)
//
// An equivalent mutant may be excluded in the source with
// `// Stryker disable next-line <Mutator>: <why every such mutant on the next line is equivalent>`,
// never by lowering a threshold; the 85 % target applies to the raw score.

/** The modules and the files each one mutates. */
export const MODULES = {
  semaphore: [
    'lib/semaphore/backoff.ts',
    // The rate budget (docs/fleet-cap.md): its law, item, schedule, booking loop and booking.
    'lib/semaphore/rate-law.ts',
    'lib/semaphore/budget-item.ts',
    'lib/semaphore/rate-schedule.ts',
    'lib/semaphore/book-slots.ts',
    'lib/semaphore/rate-booking.ts',
    // A sharded tenant's stripes booked as one budget (docs/decisions/striped-shard-budgets.md).
    'lib/semaphore/two-choice-budget.ts',
  ],
  pool: [
    'lib/pool/executor-pool.ts',
    'lib/pool/process.ts',
    // The scheduler's parts, each in its own file.
    'lib/pool/attempt-runner.ts',
    'lib/pool/start-pacer.ts',
    'lib/pool/paced-queue.ts',
    'lib/pool/slot-rests.ts',
    'lib/pool/retry-waits.ts',
    'lib/pool/task-promise.ts',
    'lib/pool/waiters.ts',
    // The one Backoff the pool, the semaphore and the handler share.
    'lib/backoff/exponential.ts',
    'lib/backoff/decorrelated.ts',
    'lib/backoff/constant.ts',
  ],
  db: [
    'lib/db/resource.ts',
    'lib/db/sequenced-writer.ts',
    'lib/db/record-fields.ts',
    'lib/db/canonical-json.ts',
    // Sharded resources (docs/decisions/sharded-keys.md): the hash, the keys, the merged listing, the groups.
    'lib/db/shard-hash.ts',
    'lib/db/resource-layout.ts',
    'lib/db/sharded-list.ts',
    'lib/db/shard-groups.ts',
    'lib/db/copy-layout.ts',
  ],
  handler: [
    'lib/ingest/handler/settle/invocation-metrics.ts',
    'lib/ingest/handler/settle/dead-letter-queue.ts',
    // SendMessageBatch packing and sending, shared by the DLQ and the deferrals (moved out of dead-letter-queue.ts).
    'lib/ingest/handler/settle/send-message-batches.ts',
    'lib/ingest/handler/settle/deferral-queue.ts',
    'lib/ingest/handler/settle/send-dead-letters.ts',
    'lib/ingest/handler/run/tenant-databases.ts',
    // The fleet cap's holder side (docs/fleet-cap.md): which tenants book, a holder, its pace.
    'lib/ingest/handler/run/prefix-rates.ts',
    'lib/ingest/handler/run/rate-holder.ts',
    'lib/ingest/handler/run/rate-pace.ts',
    // A sharded tenant's stripes: how many, who books them, where a new one starts.
    'lib/ingest/handler/run/shard-stripes.ts',
    'lib/ingest/handler/ingest-handler.ts',
    'lib/ingest/handler/plan/plan-batch.ts',
    'lib/ingest/handler/run/run-tenants.ts',
    'lib/ingest/handler/run/tenant-writes.ts',
    'lib/ingest/handler/settle/outcome-ledger.ts',
    'lib/ingest/handler/run/apply-write.ts',
    'lib/ingest/handler/run/prefix-write-counts.ts',
    'lib/ingest/handler/settle/defer-out-of-turn.ts',
  ],
  message: ['lib/ingest/message/parse.ts', 'lib/ingest/message/limits.ts'],
  // The operator's dead-letter tools (issue 38): the commands and the parts that move data.
  dlq: [
    'lib/cli/dlq/redrive.ts',
    'lib/cli/dlq/export.ts',
    'lib/cli/dlq/import.ts',
    'lib/cli/dlq/queue-scan.ts',
    'lib/cli/dlq/copy-sender.ts',
    'lib/cli/dlq/letter-copy.ts',
    'lib/cli/dlq/origin.ts',
    'lib/cli/dlq/queue-address.ts',
    'lib/cli/dlq/export-line.ts',
    'lib/cli/dlq/move-summary.ts',
  ],
};

const selected = (process.env.MUTATION_MODULES ?? '').split(',').filter(Boolean);
for (const name of selected) {
  if (!(name in MODULES))
    throw new Error(`MUTATION_MODULES: unknown module "${name}" (${Object.keys(MODULES).join(', ')})`);
}
const modules = selected.length > 0 ? selected : Object.keys(MODULES);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.mts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: modules.flatMap((name) => MODULES[name]),
  coverageAnalysis: 'perTest',
  // Static mutants (module-level constants) would re-run the whole suite each; the scores leave them out.
  ignoreStatic: true,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  thresholds: { high: 90, low: 85, break: null },
  // MUTATION_CONCURRENCY=1 on a shared machine.
  concurrency: Number(process.env.MUTATION_CONCURRENCY ?? 2),
  timeoutMS: 20_000,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
