// Issue 14, defect 5, end to end: a redeploy with another S3_PREFIX_WRITE_RATE (so another semaphore limit)
// on the same semaphore table keeps ingesting; on main every write of the new deployment was redelivered.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../lib/ingest/config.js';
import { createIngestHandler, type IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { type LocalResources, provisionLocal } from '../../../lib/local/emulators/provision.js';
import { localAwsEndpoints } from '../../support/local-aws.js';
import {
  body,
  failedIds,
  lambdaContext,
  quietMetrics,
  silentLogger,
  sqsEvent,
} from '../../unit/ingest/handler/support.js';

const handlers: IngestHandler[] = [];

beforeAll(() => {
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
});
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});
afterAll(() => vi.unstubAllEnvs());

function deploy(r: LocalResources, rate: number): IngestHandler {
  const endpoints = localAwsEndpoints();
  const handler = createIngestHandler(
    loadConfig({
      BUCKET_NAME: r.bucket,
      DLQ_URL: r.dlqUrl,
      SEMAPHORE_TABLE: r.tableName,
      RESOURCES: JSON.stringify({ orders: {} }),
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_S3: endpoints.s3,
      AWS_ENDPOINT_URL_SQS: endpoints.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      S3_PREFIX_WRITE_RATE: String(rate),
      DEADLINE_MARGIN_MS: '1000',
      WRITE_TIMEOUT_MS: '1000',
    }),
    { logger: silentLogger(), metrics: quietMetrics() },
  );
  handlers.push(handler);
  return handler;
}

const batch = (from: number) =>
  sqsEvent(Array.from({ length: 12 }, (_, i) => body({ tenant: 'acme', id: `o-${from + i}` })));

describe('a redeploy with another S3_PREFIX_WRITE_RATE', () => {
  it('keeps writing, for a smaller and then a larger limit, with no manual step', async () => {
    const name = `rate-${randomUUID().slice(0, 8)}`;
    const r = await provisionLocal({
      endpoints: localAwsEndpoints(),
      bucket: name,
      queueName: `${name}-ingest`,
      tableName: `${name}-semaphore`,
    });
    for (const [i, rate] of [3500, 1000, 5000].entries()) {
      const response = await deploy(r, rate)(batch(i * 100), lambdaContext(10_000));
      expect(failedIds(response)).toEqual([]);
    }
  });
});
