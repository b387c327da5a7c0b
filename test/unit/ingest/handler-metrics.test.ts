import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { INGEST_METRIC_NAMES, INGEST_METRICS } from '../../../lib/ingest/metric-names.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { captureStdout } from './handler/capture-stdout.js';
import { keyOf, lambdaContext, sqsEvent, TrackingStore, testHandler } from './handler/support.js';

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
    const { handler } = testHandler({ WRITE_RETRIES: '2' }, { store, metrics, logger });
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
