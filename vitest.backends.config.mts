import { defineConfig } from 'vitest/config';

// `npm run test:backends`: the storage contracts on real servers no one here wrote. One global setup starts
// Ceph RADOS Gateway (S3) and DynamoDB Local (scripts/backends/) for the whole run and stops them at the end.
// - test/backends/*.backends.ts: the ObjectStore/Database contract on RGW, the DynamoRateBudget races on
//   DynamoDB Local (not `*.test.ts`, so the default `npm test` run, which has no such servers, leaves them out).
// - test/conformance/s3-conformance.test.ts: the same S3 suite `npm test` runs on the embedded S3, here also
//   on RGW (its quirks are declared in the suite).
// - test/integration/semaphore/{rate-budget.contract,dynamo-rate-budget-faults,budget-table}.test.ts: the rate
//   budget suites written for dynalite, pointed at DynamoDB Local through the same `localAws` endpoints the
//   default run provides.
// Not rate-budget-processes.test.ts (worker processes on the same table): its workers take seconds to start
// next to Ceph and a JVM on 2 shared cores, and what it checks across processes is the conditional write the
// races in test/backends/ exercise on DynamoDB Local in one process.
export default defineConfig({
  test: {
    name: 'backends',
    include: [
      'test/backends/**/*.backends.ts',
      'test/integration/semaphore/rate-budget.contract.test.ts',
      'test/integration/semaphore/dynamo-rate-budget-faults.test.ts',
      'test/integration/semaphore/budget-table.test.ts',
      // The S3 conformance suite: in this run on Ceph RGW as well as on the embedded S3.
      'test/conformance/**/*.test.ts',
    ],
    globalSetup: ['test/backends/global-setup.ts'],
    testTimeout: 60_000,
    // Starting a Ceph cluster and a JVM on a shared 2-core machine: allow minutes, not seconds.
    hookTimeout: 180_000,
    // One file at a time: the rate budget suites race on deadlines, next to Ceph and a JVM on 2 shared cores.
    fileParallelism: false,
  },
});
