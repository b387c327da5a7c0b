import type { TestProject } from 'vitest/node';
import { startBackends } from '../../scripts/backends/backends.js';
import type { LocalAwsEndpoints } from '../support/local-aws.js';
import './support/backends.js';

/**
 * `npm run test:backends`: starts Ceph RGW and DynamoDB Local once for the run (~15-25 s here) and stops
 * them, removing their directory, when the run ends, passes or fails.
 *
 * Also provides `localAws`, so the suites written for the embedded emulators (test/integration/semaphore)
 * run unchanged against DynamoDB Local: `localClientConfig('dynamodb')` points there. This run has no SQS:
 * its endpoint is a closed loopback port, so a stray SQS call fails at once instead of reaching anything.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const backends = await startBackends();
  const { rgw, dynamodbLocal } = backends.endpoints;
  const t = backends.timings;
  process.stderr.write(
    `test:backends: RGW ready in ${t.rgwReadyMs} ms (+${t.rgwWarmMs} ms warm-up), ` +
      `DynamoDB Local in ${t.dynamodbLocalReadyMs} ms\n`,
  );
  project.provide('backends', backends.endpoints);
  const localAws: LocalAwsEndpoints = {
    s3: rgw.endpoint,
    sqs: 'http://127.0.0.1:9',
    dynamodb: dynamodbLocal.endpoint,
  };
  project.provide('localAws', localAws);
  project.provide('localAwsTarget', 'external');
  return () => backends.stop();
}
