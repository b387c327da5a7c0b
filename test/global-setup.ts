import type { TestProject } from 'vitest/node';
import { type LocalAwsEndpoints, startLocalAws } from '../lib/local/emulators/local-aws.js';
import { externalEndpointsFromEnv } from './support/external-endpoints.js';

/**
 * Provides AWS endpoints to every test file through `inject('localAws')` (see test/support/local-aws.ts).
 * With `AWS_ENDPOINT_URL` (or all of `AWS_ENDPOINT_URL_S3` / `_SQS` / `_DYNAMODB`) set, those are used as
 * they are (LocalStack via `npm run test:localstack`, or real AWS); otherwise one embedded stack
 * (fauxqs + dynalite) runs for the whole test run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = externalEndpointsFromEnv(process.env);
  if (external !== undefined) {
    project.provide('localAws', external);
    project.provide('localAwsTarget', 'external');
    return async () => {};
  }
  const aws = await startLocalAws();
  const endpoints: LocalAwsEndpoints = aws.endpoints;
  project.provide('localAws', endpoints);
  project.provide('localAwsTarget', 'embedded');
  return () => aws.stop();
}
