import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureStdout, type Emf } from './handler/capture-stdout.js';
import { lambdaContext, sqsEvent, testHandler } from './handler/support.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

/** Runs `events` one after the other on one handler (all acknowledged); each invocation's EMF line. */
async function invocationLines(events: readonly SQSEvent[]): Promise<Emf[]> {
  vi.stubEnv('POWERTOOLS_DEV', 'false');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  const metrics = new Metrics({ namespace: 'S3IngestTest', serviceName: 'ingest-test' });
  const { handler } = testHandler({}, { metrics });
  const out = captureStdout();
  try {
    for (const event of events)
      expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
  } finally {
    out.restore();
    await handler.close();
  }
  return out.emf().filter((l) => 'RecordsProcessed' in l);
}

describe('PoolErrors counts failures, not expected answers', () => {
  it('a redelivered batch of 20 message-keyed inserts reports 20 processed and 0 pool errors', async () => {
    // Inserts without an id: the id is derived from the SQS message id, so the second delivery finds
    // its own objects (412 on If-None-Match) and counts them as written.
    const event = sqsEvent(Array.from({ length: 20 }, (_, i) => ({ op: 'insert' as const, data: { n: i } })));
    const lines = await invocationLines([event, event]);
    expect(lines).toHaveLength(2);
    const [first, second] = [lines[0]!, lines[1]!];
    // The first delivery wrote every record; the second found its own objects: stale, no new write.
    expect(first).toMatchObject({ RecordsProcessed: 20, StaleWrites: 0, Writes: 20 });
    expect(second.Writes).toBe(0);
    expect(second.StaleWrites).toBe(20);
    expect(second.RecordsProcessed).toBe(20);
    expect(second.RecordsFailed).toBe(0);
    expect(second.PoolErrors).toBe(0);
  });
});

describe('StaleWrites counts the records acknowledged without a change', () => {
  it('a write older than the stored state and a duplicate are stale; a newer one is not', async () => {
    const newer = sqsEvent([{ id: 'o-1', seq: 20, data: { total: 20 } }]);
    const older = sqsEvent([
      { id: 'o-1', seq: 10, data: { total: 10 } },
      { id: 'o-2', seq: 5, data: { total: 5 } },
    ]);
    const lines = await invocationLines([newer, older, newer]);
    expect(lines.map((l) => [l.RecordsProcessed, l.StaleWrites, l.Writes])).toEqual([
      [1, 0, 1],
      // o-1 at seq 10 is older than the stored seq 20: acknowledged, not written; o-2 is new.
      [2, 1, 1],
      // The same message again: a duplicate of what is stored.
      [1, 1, 0],
    ]);
  });
});
