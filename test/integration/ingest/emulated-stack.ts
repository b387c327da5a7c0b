// Shared by the handler tests that build the handler as Lambda does (its own SDK clients) on the emulators.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, vi } from 'vitest';
import { type IngestConfig, loadConfig } from '../../../lib/ingest/config.js';
import { type LocalResources, provisionLocal } from '../../../lib/local/emulators/provision.js';
import { localAwsEndpoints } from '../../support/local-aws.js';

/** The handler's clients take credentials from the environment, as in Lambda: test ones for this file. */
export function useTestCredentials(): void {
  beforeAll(() => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  });
  afterAll(() => {
    vi.unstubAllEnvs();
  });
}

/** A fresh bucket, queue + DLQ and semaphore table on the run's emulators. */
export function provisionFresh(prefix: string): Promise<LocalResources> {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  return provisionLocal({
    endpoints: localAwsEndpoints(),
    bucket: name,
    queueName: `${name}-ingest`,
    tableName: `${name}-semaphore`,
  });
}

/** The handler's config on `r` and the emulators (one `orders` resource); `env` overrides any key. */
export function stackConfig(r: LocalResources, env: Record<string, string> = {}): IngestConfig {
  const endpoints = localAwsEndpoints();
  return loadConfig({
    BUCKET_NAME: r.bucket,
    DLQ_URL: r.dlqUrl,
    SEMAPHORE_TABLE: r.tableName,
    RESOURCES: JSON.stringify({ orders: {} }),
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    DEADLINE_MARGIN_MS: '1000',
    ...env,
  });
}
