import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  INGEST_CATALOGUE_METRIC_NAMES,
  INGEST_METRIC_CATALOGUE,
  type IngestCatalogueMetricName,
} from '../../../lib/ingest/metric-names.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { captureStdout, type Emf } from './handler/capture-stdout.js';
import {
  keyOf,
  lambdaContext,
  memoryBudgets,
  prefixOf,
  sqsEvent,
  type TestHandlerOptions,
  TrackingStore,
  testHandler,
} from './handler/support.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

const slowDown = () =>
  Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });

/** A handler whose EMF lines are printed (and captured), in namespace S3IngestTest, service ingest-test. */
function emittingHandler(env: Record<string, string>, options: TestHandlerOptions = {}) {
  vi.stubEnv('POWERTOOLS_DEV', 'false');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  const metrics = new Metrics({ namespace: 'S3IngestTest', serviceName: 'ingest-test' });
  const logger = new Logger({ serviceName: 'ingest-test', logLevel: 'WARN' });
  return testHandler(env, { metrics, logger, ...options });
}

/** Runs the events one after the other on one handler instance, capturing stdout. */
async function invoke(
  handler: ReturnType<typeof testHandler>['handler'],
  events: readonly SQSEvent[],
  remainingMs = 30_000,
) {
  const out = captureStdout();
  const responses: SQSBatchResponse[] = [];
  try {
    for (const event of events) responses.push(await handler(event, lambdaContext(remainingMs)));
  } finally {
    out.restore();
    await handler.close();
  }
  const emf = out.emf();
  return {
    responses,
    out,
    /** The invocations' main lines (dimension service only). */
    main: emf.filter((l) => JSON.stringify(l._aws.CloudWatchMetrics[0]!.Dimensions) === '[["service"]]'),
    /** The second-dimension lines: `{ metric, dimension, value, count }`. */
    splits: emf
      .filter((l) => l._aws.CloudWatchMetrics[0]!.Dimensions[0]!.length === 2)
      .map((l) => {
        const d = l._aws.CloudWatchMetrics[0]!;
        const metric = d.Metrics[0]!.Name;
        const dimension = d.Dimensions[0]![1]!;
        return { metric, dimension, value: l[dimension], count: l[metric], dims: d.Dimensions, line: l };
      }),
  };
}

const samplesOf = (line: Emf, name: string): number[] => {
  const v = line[name];
  return v === undefined ? [] : Array.isArray(v) ? (v as number[]) : [v as number];
};

describe('EMF metrics (the catalogue of lib/ingest/metric-names.ts) and structured logs', () => {
  it('one line per invocation: every count, latency samples, dimension service only, tenants in metadata; splits by reason', async () => {
    const store = new TrackingStore({ model: new S3BehaviourModel({ writesPerSecond: Infinity }) });
    let throttled = 0;
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('globex', 'orders', 'slow') && throttled++ === 0)
        throw slowDown();
    };
    const { handler } = emittingHandler({ WRITE_RETRIES: '2' }, { store });
    const event = sqsEvent([
      { tenant: 'acme', id: 'a-1' },
      { tenant: 'globex', id: 'slow' },
      { tenant: 'globex', op: 'update', id: 'missing', data: { x: 1 } },
      'not json',
    ]);
    const { responses, main, splits, out } = await invoke(handler, [event]);
    expect(responses[0]).toEqual({ batchItemFailures: [] });
    expect(main).toHaveLength(1);
    const line = main[0]!;
    const [directive] = line._aws.CloudWatchMetrics;
    expect(line._aws.CloudWatchMetrics).toHaveLength(1);
    expect(directive!.Namespace).toBe('S3IngestTest');
    expect(line.service).toBe('ingest-test');
    // Every catalogue metric but the split ones; BookingWaitMs has no sample without a budget.
    const expected = INGEST_CATALOGUE_METRIC_NAMES.filter(
      (n) => !('dimension' in INGEST_METRIC_CATALOGUE[n]) && n !== 'BookingWaitMs',
    );
    expect(directive!.Metrics.map((m) => m.Name).sort()).toEqual([...expected].sort());
    for (const m of directive!.Metrics)
      expect(m.Unit).toBe(INGEST_METRIC_CATALOGUE[m.Name as IngestCatalogueMetricName].unit);
    expect(line).toMatchObject({
      // The update of a missing record is kept pending (issue 15): processed, not dead-lettered.
      RecordsProcessed: 3,
      RecordsFailed: 0,
      RecordsDeadLettered: 1,
      StaleWrites: 0,
      // S3 write calls, every attempt: acme's PUT, globex/slow's throttled PUT and its retry, the pending PUT.
      Writes: 4,
      Retries: 1,
      S3SlowDowns: 1,
      Timeouts: 0,
      PoolErrors: 0,
      BookedWriteRate: 0,
      DeadlineReached: 0,
      SemaphoreThrottles: 0,
      SemaphoreErrors: 0,
    });
    expect(store.writes()).toHaveLength(4);
    // One ExecutionMs sample per attempt: a GET per record read before its conditional PUT (3), 3 PUTs ok,
    // 1 throttled; one QueueWaitMs per completed task (3 GETs, 3 PUTs).
    expect(samplesOf(line, 'ExecutionMs')).toHaveLength(7);
    expect(samplesOf(line, 'QueueWaitMs')).toHaveLength(6);
    for (const v of samplesOf(line, 'ExecutionMs')) expect(v).toBeGreaterThanOrEqual(0);
    expect(String(line.tenants).split(',').sort()).toEqual(['acme', 'globex']);
    expect(JSON.stringify(line._aws)).not.toContain('tenant');

    // RecordsRejected by reason: one line per reason, dimensions service + reason, adding up.
    expect(
      splits
        .map(({ metric, value, count }) => ({ metric, value, count }))
        .sort((a, b) => String(a.value).localeCompare(String(b.value))),
    ).toEqual([{ metric: 'RecordsRejected', value: 'invalid-json', count: 1 }]);
    for (const s of splits) {
      expect(s.dims).toEqual([['service', 'reason']]);
      expect(s.line._aws.CloudWatchMetrics[0]!.Namespace).toBe('S3IngestTest');
      expect(s.line.service).toBe('ingest-test');
    }

    // Structured JSON logs carry the tenant and the message id of what went wrong.
    const deadLettered = out.logs().filter((l) => l.message === 'message dead-lettered');
    expect(deadLettered).toHaveLength(1);
    expect(deadLettered[0]).toMatchObject({
      level: 'WARN',
      service: 'ingest-test',
      reason: 'invalid-json',
      messageId: event.Records[3]!.messageId,
    });
  });

  it('RecordsRedelivered by cause adds up to RecordsFailed', async () => {
    const store = new TrackingStore();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key.startsWith('t=globex/')) throw slowDown();
    };
    const { handler } = emittingHandler({ WRITE_RETRIES: '0' }, { store });
    const event = sqsEvent([
      { tenant: 'acme', id: 'ok' },
      { tenant: 'globex', id: 'g-1' },
      { tenant: 'globex', id: 'g-1', data: { total: 2 } },
      { tenant: 'globex', id: 'g-2' },
    ]);
    const { responses, main, splits } = await invoke(handler, [event]);
    expect(responses[0]!.batchItemFailures).toHaveLength(3);
    expect(main[0]).toMatchObject({ RecordsProcessed: 1, RecordsFailed: 3, S3SlowDowns: 2, PoolErrors: 2 });
    const byCause = Object.fromEntries(
      splits.filter((s) => s.metric === 'RecordsRedelivered').map((s) => [s.value, s.count]),
    );
    // g-1's two writes are one coalesced PUT: it and g-2's failed on storage, three records redelivered.
    expect(byCause).toEqual({ storage: 3 });
    for (const s of splits) expect(s.dims).toEqual([['service', 'cause']]);
    expect((Object.values(byCause) as number[]).reduce((a, b) => a + b, 0)).toBe(main[0]!.RecordsFailed);
  });

  it('warm invocations on one handler instance: each line has only its own counts', async () => {
    const store = new TrackingStore();
    let throttle = true;
    store.hook = (call) => {
      if (call.kind === 'put' && throttle) {
        throttle = false;
        throw slowDown();
      }
    };
    const { handler } = emittingHandler({ WRITE_RETRIES: '2' }, { store });
    const first = sqsEvent([{ id: 'a' }, { id: 'b' }]);
    const second = sqsEvent([{ id: 'c' }, { id: 'd' }, { id: 'e' }]);
    const { main } = await invoke(handler, [first, second]);
    expect(main).toHaveLength(2);
    expect(main[0]).toMatchObject({ RecordsProcessed: 2, Writes: 3, Retries: 1, S3SlowDowns: 1 });
    expect(main[1]).toMatchObject({ RecordsProcessed: 3, Writes: 3, Retries: 0, S3SlowDowns: 0 });
    // Each record: a GET (nothing cached yet) and its PUT; the first invocation's throttled PUT adds one.
    expect(samplesOf(main[0]!, 'ExecutionMs')).toHaveLength(5);
    expect(samplesOf(main[1]!, 'ExecutionMs')).toHaveLength(6);
    expect(samplesOf(main[1]!, 'QueueWaitMs')).toHaveLength(6);
  });

  it('latency samples are capped below 100 per metric, so an invocation stays one EMF line', async () => {
    const { handler } = emittingHandler({ POOL_CONCURRENCY: '16' });
    const event = sqsEvent(Array.from({ length: 250 }, (_, i) => ({ id: `r-${i}` })));
    const { main } = await invoke(handler, [event]);
    expect(main).toHaveLength(1);
    expect(main[0]).toMatchObject({ RecordsProcessed: 250, Writes: 250 });
    expect(samplesOf(main[0]!, 'ExecutionMs')).toHaveLength(99);
    expect(samplesOf(main[0]!, 'QueueWaitMs')).toHaveLength(99);
  });

  it('rate signals: BookingWaitMs per booking, BookedWriteRate, throttled and failed budget calls', async () => {
    let flakyReports = 0;
    const budgets = memoryBudgets({
      book: (name) => {
        if (name === prefixOf('throttled'))
          throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      },
      report: (name) => {
        if (name !== prefixOf('flaky')) return;
        flakyReports += 1;
        throw new Error('socket hang up');
      },
    });
    const { handler } = emittingHandler({ S3_PREFIX_WRITE_RATE: '500' }, { budgets: budgets.factory });
    const many = (tenant: string) => Array.from({ length: 10 }, (_, i) => ({ tenant, id: `${tenant}-${i}` }));
    const event = sqsEvent([...many('big'), ...many('throttled'), ...many('flaky')]);
    const { responses, main, splits } = await invoke(handler, [event]);
    expect(responses[0]!.batchItemFailures).toHaveLength(10);
    expect(main[0]).toMatchObject({
      RecordsProcessed: 20,
      RecordsFailed: 10,
      // Two tenants booked, each on a fresh schedule at S3_PREFIX_WRITE_RATE (a failed report keeps its rate).
      BookedWriteRate: 2 * 500,
      SemaphoreThrottles: 1,
      // Every failed report: one per booking of the flaky tenant (a holder whose writes fell behind their
      // slots, on a loaded host, books and reports again).
      SemaphoreErrors: flakyReports,
    });
    expect(flakyReports).toBeGreaterThanOrEqual(1);
    // One sample per booking: the three tenants', and any a holder made again for writes left behind its slots.
    expect(budgets.books().length).toBeGreaterThanOrEqual(3);
    expect(samplesOf(main[0]!, 'BookingWaitMs')).toHaveLength(budgets.books().length);
    expect(splits.filter((s) => s.metric === 'RecordsRedelivered').map((s) => [s.value, s.count])).toEqual([
      ['permits-unavailable', 10],
    ]);
  });

  it('DeadlineReached is 1 for an invocation that reached the deadline margin', async () => {
    const store = new TrackingStore();
    // The write waits until the invocation's cutoff aborts it.
    store.hook = (call) =>
      new Promise((_, reject) => {
        call.signal?.addEventListener('abort', () => reject(call.signal?.reason), { once: true });
      });
    const { handler } = emittingHandler({ DEADLINE_MARGIN_MS: '2000' }, { store });
    const { main, splits } = await invoke(handler, [sqsEvent([{ id: 'late' }])], 2_100);
    expect(main[0]).toMatchObject({ DeadlineReached: 1, RecordsFailed: 1, PoolErrors: 0 });
    expect(splits.map((s) => [s.value, s.count])).toEqual([['deadline', 1]]);
  });
});
