import { randomUUID } from 'node:crypto';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { captureStdout } from '../../unit/ingest/handler/capture-stdout.js';
import { keyOf, lambdaContext, sqsEvent } from '../../unit/ingest/handler/support.js';

afterAll(() => {
  vi.unstubAllEnvs();
});

describe('functions/ingest.ts (middy + Powertools)', () => {
  let bucket: string;
  let s3: S3Client;

  beforeAll(async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    const resources = await provisionLocal({
      endpoints: localAwsEndpoints(),
      bucket: name,
      queueName: `${name}-ingest`,
      tableName: `${name}-semaphore`,
    });
    bucket = resources.bucket;
    s3 = new S3Client(localClientConfig('s3'));
    const endpoints = localAwsEndpoints();
    const env: Record<string, string> = {
      BUCKET_NAME: resources.bucket,
      DLQ_URL: resources.dlqUrl,
      SEMAPHORE_TABLE: resources.tableName,
      RESOURCES: JSON.stringify({ orders: {} }),
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_S3: endpoints.s3,
      AWS_ENDPOINT_URL_SQS: endpoints.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      POWERTOOLS_SERVICE_NAME: 's3-ingest',
      POWERTOOLS_METRICS_NAMESPACE: 'S3Ingest',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      POWERTOOLS_DEV: 'false',
      POWERTOOLS_METRICS_DISABLED: 'false',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_LAMBDA_FUNCTION_NAME: 's3-ingest-fn',
    };
    for (const [key, value] of Object.entries(env)) vi.stubEnv(key, value);
  });
  afterAll(() => s3?.destroy());

  it('handles SQS events; the cold-start metric once, the ingest EMF line once per invocation', async () => {
    const { handler } = await import('../../../functions/ingest.js');
    const out = captureStdout();
    const responses: SQSBatchResponse[] = [];
    try {
      for (const id of ['f-1', 'f-2']) {
        // Ten writes of one tenant: enough for it to book its prefix's slots (fewer write without a booking).
        const writes = Array.from({ length: 10 }, (_, i) => ({
          id: i === 0 ? id : `${id}-${i}`,
          data: { n: id },
        }));
        const event = sqsEvent([...writes, 'not json']);
        responses.push(await handler(event, lambdaContext(30_000)));
      }
    } finally {
      out.restore();
    }
    expect(responses).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    const emf = out.emf();
    const coldStarts = emf.filter((l) => 'ColdStart' in l);
    expect(coldStarts).toHaveLength(1);
    expect(coldStarts[0]).toMatchObject({ ColdStart: 1, service: 's3-ingest' });
    const ingest = emf.filter((l) => 'RecordsProcessed' in l);
    expect(ingest).toHaveLength(2);
    for (const line of ingest) {
      expect(line).toMatchObject({ RecordsProcessed: 10, RecordsDeadLettered: 1, service: 's3-ingest' });
      expect(line._aws.CloudWatchMetrics[0]!.Namespace).toBe('S3Ingest');
      expect(line._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
      expect(line.BookedWriteRate as number).toBeGreaterThanOrEqual(1);
    }
    for (const id of ['f-1', 'f-2']) {
      const object = await s3.send(
        new GetObjectCommand({ Bucket: bucket, Key: keyOf('acme', 'orders', id) }),
      );
      expect(JSON.parse(await object.Body!.transformToString())).toMatchObject({ id, n: id });
    }
  });
});
