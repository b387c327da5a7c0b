import { defineConfig } from 'vitest/config';

// `npm run test:backends`: the storage contracts on real servers no one here wrote. One global setup starts
// Ceph RADOS Gateway (S3) and DynamoDB Local (scripts/backends/) for the whole run and stops them at the end.
// - test/backends/: the ObjectStore/Database contract on RGW, the DynamoSemaphore contract on DynamoDB Local.
// - test/integration/semaphore/: the semaphore suites written for dynalite, pointed at DynamoDB Local through
//   the same `localAws` endpoints the default run provides.
export default defineConfig({
  test: {
    name: 'backends',
    include: ['test/backends/**/*.test.ts', 'test/integration/semaphore/**/*.test.ts'],
    globalSetup: ['test/backends/global-setup.ts'],
    testTimeout: 60_000,
    // Starting a Ceph cluster and a JVM on a shared 2-core machine: allow minutes, not seconds.
    hookTimeout: 180_000,
    // One file at a time: the semaphore's cross-process suite checks that its workers really overlapped,
    // which a second file's load (next to Ceph and a JVM on 2 shared cores) can prevent.
    fileParallelism: false,
  },
});
