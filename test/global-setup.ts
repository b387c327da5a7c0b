import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';
import type { TestProject } from 'vitest/node';
import type { LocalAwsEndpoints } from './support/local-aws.js';

/**
 * Starts one embedded AWS stack (fauxqs for SQS + S3, dynalite for DynamoDB) for the whole test run and
 * provides its endpoints to every test file through `inject('localAws')`.
 * (Bootstrap version; the local AWS issue replaces the body with `startLocalAws()`, same provided shape.)
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fauxqs = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
  const dynamo = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => dynamo.listen(0, '127.0.0.1', () => resolve()));
  const address = dynamo.address();
  if (address === null || typeof address === 'string') throw new Error('dynalite did not bind a TCP port');
  const endpoints: LocalAwsEndpoints = {
    s3: fauxqs.address,
    sqs: fauxqs.address,
    dynamodb: `http://127.0.0.1:${address.port}`,
  };
  project.provide('localAws', endpoints);
  return async () => {
    await fauxqs.stop();
    await new Promise<void>((resolve) => dynamo.close(() => resolve()));
  };
}
