import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureStdout } from './handler/capture-stdout.js';
import { lambdaContext, sqsEvent, testHandler } from './handler/support.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('PoolErrors counts failures, not expected answers', () => {
  it('a redelivered batch of 20 message-keyed inserts reports 20 processed and 0 pool errors', async () => {
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const metrics = new Metrics({ namespace: 'S3IngestTest', serviceName: 'ingest-test' });
    const { handler } = testHandler({}, { metrics });
    // Inserts without an id: the id is derived from the SQS message id, so the second delivery finds
    // its own objects (412 on If-None-Match) and counts them as written.
    const event = sqsEvent(Array.from({ length: 20 }, (_, i) => ({ op: 'insert' as const, data: { n: i } })));
    const out = captureStdout();
    try {
      expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
      expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    } finally {
      out.restore();
      await handler.close();
    }
    const lines = out.emf().filter((l) => 'RecordsProcessed' in l);
    expect(lines).toHaveLength(2);
    const second = lines[1]!;
    expect(second.RecordsProcessed).toBe(20);
    expect(second.RecordsFailed).toBe(0);
    expect(second.PoolErrors).toBe(0);
  });
});
