// InvocationMetrics on a real ExecutorPool: which pool events become throttles, timeouts, retries and pool
// errors, that detaching stops all counting (warm invocations share pools), and what `addTo` publishes.
// Issue 14's mutation testing found these counts never asserted and listeners that could double-count.
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordExistsError, RecordNotFoundError } from '../../../../../lib/db/errors.js';
import { PreconditionFailedError } from '../../../../../lib/db/object-store.js';
import { InvocationMetrics } from '../../../../../lib/ingest/handler/settle/invocation-metrics.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';

const pools: ExecutorPool[] = [];
afterEach(() => {
  for (const pool of pools.splice(0)) pool.stop();
});

function pool(retries = 0): ExecutorPool {
  const p = new ExecutorPool({ concurrency: 2, retries, retryDelay: 1, maxRetryDelay: 1 });
  pools.push(p);
  return p;
}

const slowDown = () =>
  Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });
const timeout = () => Object.assign(new Error('timed out'), { name: 'TimeoutError' });
const forbidden = () =>
  Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });

/** Runs `fn` on `p`, swallowing its failure (the counts are what is tested). */
async function run(p: ExecutorPool, fn: () => Promise<unknown>): Promise<void> {
  await p.enqueue(fn).catch(() => undefined);
}

describe('InvocationMetrics counts its pools', () => {
  it('a throttled attempt is an S3SlowDown, its retry a Retry; a final failure a PoolError', async () => {
    const p = pool(1);
    const m = new InvocationMetrics();
    m.watch(p);
    await run(p, async () => {
      throw slowDown();
    });
    expect(m.counts).toMatchObject({ S3SlowDowns: 2, Retries: 1, PoolErrors: 1, Timeouts: 0 });
    expect(m.samples().ExecutionMs).toHaveLength(2);
    expect(m.samples().QueueWaitMs).toHaveLength(0);
  });

  it('a timeout is a Timeout; a success adds queue-wait and execution samples only', async () => {
    const p = pool();
    const m = new InvocationMetrics();
    m.watch(p);
    await run(p, async () => {
      throw timeout();
    });
    await run(p, async () => 'ok');
    expect(m.counts).toMatchObject({ Timeouts: 1, S3SlowDowns: 0, Retries: 0, PoolErrors: 1 });
    expect(m.samples().ExecutionMs).toHaveLength(2);
    expect(m.samples().QueueWaitMs).toHaveLength(1);
  });

  it("the store's expected answers (412, record exists, record not found) are not pool errors; others are", async () => {
    const p = pool();
    const m = new InvocationMetrics();
    m.watch(p);
    for (const error of [
      new PreconditionFailedError('k', 'if-none-match'),
      new RecordExistsError('orders', 'o-1'),
      new RecordNotFoundError('orders', 'o-1'),
    ]) {
      await run(p, async () => {
        throw error;
      });
    }
    expect(m.counts.PoolErrors).toBe(0);
    await run(p, async () => {
      throw forbidden();
    });
    expect(m.counts).toMatchObject({ PoolErrors: 1, S3SlowDowns: 0, Timeouts: 0 });
  });

  it('after detach nothing is counted; the next invocation on the same pool counts only its own', async () => {
    const p = pool(1);
    const first = new InvocationMetrics();
    first.watch(p);
    await run(p, async () => {
      throw slowDown();
    });
    first.detach();
    const before = { ...first.counts };
    const second = new InvocationMetrics();
    second.watch(p);
    await run(p, async () => {
      throw slowDown();
    });
    await run(p, async () => 'ok');
    expect(first.counts).toEqual(before);
    expect(first.samples().ExecutionMs).toHaveLength(2);
    expect(second.counts).toMatchObject({ S3SlowDowns: 2, Retries: 1, PoolErrors: 1 });
    expect(second.samples().ExecutionMs).toHaveLength(3);
    // Detaching twice is harmless, and detaching one invocation leaves another's listeners alone.
    first.detach();
    await run(p, async () => 'ok');
    expect(second.samples().QueueWaitMs).toHaveLength(2);
  });

  it('detach stops every pool it watched', async () => {
    const a = pool();
    const b = pool();
    const m = new InvocationMetrics();
    m.watch(a);
    m.watch(b);
    m.detach();
    await run(a, async () => {
      throw slowDown();
    });
    await run(b, async () => {
      throw timeout();
    });
    expect(m.counts).toMatchObject({ S3SlowDowns: 0, Timeouts: 0, PoolErrors: 0 });
    expect(m.samples().ExecutionMs).toEqual([]);
  });
});

describe('InvocationMetrics from the other ports and the ledger', () => {
  it('counts writes, semaphore throttles apart from other semaphore failures, and permit waits', () => {
    const m = new InvocationMetrics();
    m.countWrite();
    m.countWrite();
    m.semaphoreFailure(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    m.semaphoreFailure(new Error('socket hang up'));
    m.semaphoreFailure(new Error('socket hang up'));
    m.permitWait(12);
    expect(m.counts).toMatchObject({ Writes: 2, SemaphoreThrottles: 1, SemaphoreErrors: 2 });
    expect(m.samples().BookingWaitMs).toEqual([12]);
  });

  it('settle copies the ledger counts, the deadline flag and the splits', () => {
    const m = new InvocationMetrics();
    expect(m.splits()).toEqual({ RecordsRedelivered: {}, RecordsRejected: {} });
    m.settle(
      {
        written: 3,
        deadLettered: 2,
        deferred: 5,
        redelivered: 4,
        redeliveredByCause: new Map([
          ['storage', 3],
          ['deadline', 1],
        ]),
        deadLetteredByReason: new Map([['schema', 2]]),
      },
      true,
    );
    expect(m.counts).toMatchObject({
      RecordsProcessed: 3,
      RecordsDeadLettered: 2,
      RecordsFailed: 4,
      RecordsDeferred: 5,
      DeadlineReached: 1,
    });
    expect(m.splits()).toEqual({
      RecordsRedelivered: { storage: 3, deadline: 1 },
      RecordsRejected: { schema: 2 },
    });
    m.settle(
      {
        written: 0,
        deadLettered: 0,
        deferred: 0,
        redelivered: 0,
        redeliveredByCause: new Map(),
        deadLetteredByReason: new Map(),
      },
      false,
    );
    expect(m.counts.DeadlineReached).toBe(0);
  });
});

/** A Metrics stand-in that records what is added to it and to its single-metric lines. */
function recordingMetrics() {
  const added: [string, string, number][] = [];
  const metadata: [string, string][] = [];
  const singles: { dimensions: [string, string][]; metrics: [string, string, number][] }[] = [];
  const metrics = {
    addMetric: (name: string, unit: string, value: number) => added.push([name, unit, value]),
    addMetadata: (key: string, value: string) => metadata.push([key, value]),
    singleMetric: () => {
      const single = { dimensions: [] as [string, string][], metrics: [] as [string, string, number][] };
      singles.push(single);
      return {
        addDimension: (name: string, value: string) => single.dimensions.push([name, value]),
        addMetric: (name: string, unit: string, value: number) => single.metrics.push([name, unit, value]),
      };
    },
  } as unknown as Metrics;
  return { metrics, added, metadata, singles };
}

describe('InvocationMetrics.addTo', () => {
  it('adds every count, each sample, the tenants as metadata, and one line per split value', () => {
    const m = new InvocationMetrics();
    m.countWrite();
    m.permitWait(5);
    m.permitWait(7);
    m.settle(
      {
        written: 1,
        deadLettered: 1,
        deferred: 0,
        redelivered: 2,
        redeliveredByCause: new Map([['storage', 2]]),
        deadLetteredByReason: new Map([['invalid-json', 1]]),
      },
      false,
    );
    const { metrics, added, metadata, singles } = recordingMetrics();
    m.addTo(metrics, ['acme', 'globex']);
    expect(added.filter(([name]) => name in m.counts)).toHaveLength(Object.keys(m.counts).length);
    expect(added).toContainEqual(['Writes', 'Count', 1]);
    expect(added).toContainEqual(['RecordsProcessed', 'Count', 1]);
    expect(added.filter(([name]) => name === 'BookingWaitMs')).toEqual([
      ['BookingWaitMs', 'Milliseconds', 5],
      ['BookingWaitMs', 'Milliseconds', 7],
    ]);
    expect(metadata).toEqual([['tenants', 'acme,globex']]);
    expect(singles).toEqual([
      { dimensions: [['cause', 'storage']], metrics: [['RecordsRedelivered', 'Count', 2]] },
      { dimensions: [['reason', 'invalid-json']], metrics: [['RecordsRejected', 'Count', 1]] },
    ]);
  });

  it('adds no tenants metadata and no split lines for an empty invocation', () => {
    const { metrics, metadata, singles } = recordingMetrics();
    new InvocationMetrics().addTo(metrics, []);
    expect(metadata).toEqual([]);
    expect(singles).toEqual([]);
  });
});
