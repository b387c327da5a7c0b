import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { INGEST_METRIC_NAMES, INGEST_METRICS } from '../../../lib/ingest/metric-names.js';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import {
  createDlq,
  keyOf,
  lambdaContext,
  localClients,
  sqsEvent,
  TrackingStore,
  testHandler,
} from './handler/support.js';

interface Emf {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [key: string]: unknown;
}

/**
 * Captures what Powertools prints through its own `Console` on process.stdout / stderr (not the global
 * console, which vitest intercepts): EMF and info logs on stdout, warnings and errors on stderr.
 */
function captureStdout() {
  const lines: string[] = [];
  const record = (chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(record),
    vi.spyOn(process.stderr, 'write').mockImplementation(record),
  ];
  const json = () =>
    lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return {
    restore: () => {
      for (const spy of spies) spy.mockRestore();
    },
    emf: () => json().filter((o): o is Emf => typeof o._aws === 'object') as Emf[],
    logs: () => json().filter((o) => o._aws === undefined),
  };
}

const clients = localClients();
afterAll(() => {
  clients.s3.destroy();
  clients.sqs.destroy();
  clients.dynamodb.destroy();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('EMF metrics and structured logs', () => {
  it('publishes one EMF line per invocation: every ingest metric, dimension service only, tenants in metadata', async () => {
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const store = new TrackingStore({ model: new S3BehaviourModel({ writesPerSecond: Infinity }) });
    let throttled = 0;
    store.hook = (call) => {
      if (call.key === keyOf('globex', 'orders', 'slow') && throttled++ === 0) {
        throw Object.assign(new Error('Please reduce your request rate.'), {
          name: 'SlowDown',
          $fault: 'server',
          $metadata: { httpStatusCode: 503 },
        });
      }
    };
    const metrics = new Metrics({ namespace: 'S3IngestTest', serviceName: 'ingest-test' });
    const logger = new Logger({ serviceName: 'ingest-test', logLevel: 'WARN' });
    const { handler } = testHandler(
      clients,
      { DLQ_URL: await createDlq(clients.sqs), WRITE_RETRIES: '2' },
      { store, metrics, logger },
    );
    const event = sqsEvent([
      { tenant: 'acme', id: 'a-1' },
      { tenant: 'globex', id: 'slow' },
      { tenant: 'globex', op: 'update', id: 'missing', data: { x: 1 } },
      'not json',
    ]);
    const out = captureStdout();
    let response: SQSBatchResponse;
    try {
      response = await handler(event, lambdaContext(30_000));
    } finally {
      out.restore();
      await handler.close();
    }
    expect(response).toEqual({ batchItemFailures: [] });
    const emf = out.emf();
    expect(emf).toHaveLength(1);
    const line = emf[0]!;
    const [directive] = line._aws.CloudWatchMetrics;
    expect(line._aws.CloudWatchMetrics).toHaveLength(1);
    expect(directive!.Namespace).toBe('S3IngestTest');
    expect(directive!.Dimensions).toEqual([['service']]);
    expect(line.service).toBe('ingest-test');
    expect(directive!.Metrics.map((m) => m.Name).sort()).toEqual([...INGEST_METRIC_NAMES].sort());
    for (const m of directive!.Metrics)
      expect(m.Unit).toBe(INGEST_METRICS[m.Name as keyof typeof INGEST_METRICS].unit);
    expect(line).toMatchObject({
      RecordsProcessed: 2,
      RecordsFailed: 0,
      RecordsDeadLettered: 2,
      Writes: 2,
      Retries: 1,
      Throttles: 1,
      Timeouts: 0,
      PermitsHeld: 0,
    });
    expect(line.ExecutionP99 as number).toBeGreaterThanOrEqual(line.ExecutionP50 as number);
    expect(line.QueueWaitP99 as number).toBeGreaterThanOrEqual(line.QueueWaitP50 as number);
    expect(String(line.tenants).split(',').sort()).toEqual(['acme', 'globex']);
    expect(JSON.stringify(directive!.Dimensions)).not.toContain('tenant');

    // Structured JSON logs carry the tenant and the message id of what went wrong.
    const deadLettered = out.logs().filter((l) => l.message === 'message dead-lettered');
    expect(deadLettered).toHaveLength(2);
    expect(deadLettered.find((l) => l.reason === 'record-not-found')).toMatchObject({
      level: 'WARN',
      service: 'ingest-test',
      tenant: 'globex',
      messageId: event.Records[2]!.messageId,
    });
    expect(deadLettered.find((l) => l.reason === 'invalid-json')).toMatchObject({
      messageId: event.Records[3]!.messageId,
    });
  });
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
        const event = sqsEvent([{ id, data: { n: id } }, 'not json']);
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
      expect(line).toMatchObject({ RecordsProcessed: 1, RecordsDeadLettered: 1, service: 's3-ingest' });
      expect(line._aws.CloudWatchMetrics[0]!.Namespace).toBe('S3Ingest');
      expect(line._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
      expect(line.PermitsHeld as number).toBeGreaterThanOrEqual(1);
    }
    for (const id of ['f-1', 'f-2']) {
      const object = await s3.send(
        new GetObjectCommand({ Bucket: bucket, Key: keyOf('acme', 'orders', id) }),
      );
      expect(JSON.parse(await object.Body!.transformToString())).toMatchObject({ id, n: id });
    }
  });
});
