import { afterEach, describe, expect, it, vi } from 'vitest';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import {
  DEFAULT_REDELIVERY_BACKOFF,
  type VisibilityPort,
} from '../../../lib/ingest/handler/settle/redelivery-backoff.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { SLOT_CATCH_UP_MS } from '../../../lib/semaphore/tuning.js';
import {
  failedIds,
  ids,
  keyOf,
  lambdaContext,
  memoryBudgets,
  prefixOf,
  silentLogger,
  sqsEvent,
  type TestHandlerOptions,
  TrackingStore,
  testHandler,
} from './handler/support.js';

const handlers: IngestHandler[] = [];

afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function latency(ms: number): S3BehaviourModel {
  return new S3BehaviourModel({ latency: { medianMs: ms, p99Ms: ms }, writesPerSecond: Infinity });
}

async function setup(env: Record<string, string>, options: TestHandlerOptions = {}) {
  const t = testHandler(env, options);
  handlers.push(t.handler);
  return t;
}

const records = (tenant: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ tenant, id: `${tenant}-${i}` }));

/** The writes a prefix's booking reports counted, summed per prefix over its bookings. */
function reportedWrites(
  reports: ReadonlyArray<{ name: string; report: { accepted: number; throttled: number } }>,
) {
  const byPrefix: Record<string, { accepted: number; throttled: number }> = {};
  for (const { name, report } of reports) {
    const sum = byPrefix[name] ?? { accepted: 0, throttled: 0 };
    byPrefix[name] = {
      accepted: sum.accepted + report.accepted,
      throttled: sum.throttled + report.throttled,
    };
  }
  return byPrefix;
}

describe('deadline', () => {
  it('stops before the Lambda timeout, aborts in-flight writes and reports everything unfinished', async () => {
    const store = new TrackingStore({ model: latency(60_000) });
    const budgets = memoryBudgets();
    const { handler, summaries, deadLetters } = await setup(
      { WRITE_TIMEOUT_MS: '800', DEADLINE_MARGIN_MS: '800', POOL_CONCURRENCY: '8' },
      { store, budgets: budgets.factory },
    );
    const event = sqsEvent([
      ...records('acme', 4),
      { tenant: 'acme', op: 'update', id: 'acme-0', data: { later: true } },
      'not json',
    ]);
    const started = Date.now();
    const response = await handler(event, lambdaContext(1_200));
    const elapsed = Date.now() - started;

    expect(elapsed).toBeLessThan(1_200);
    expect(elapsed).toBeGreaterThanOrEqual(390);
    const unfinished = ids(event).slice(0, 5);
    expect(failedIds(response)).toEqual(unfinished.sort());
    // The permanent failure is still dead-lettered, inside the margin.
    expect(deadLetters.letters.get(event.Records[5]!.messageId)?.reason).toBe('invalid-json');
    // Two slots (a small tenant: a quarter of POOL_CONCURRENCY 8): two writes started, both aborted; the
    // queued ones never reached the store.
    expect(store.calls).toHaveLength(2);
    for (const call of store.calls) {
      expect(call.signal?.aborted).toBe(true);
      expect(call.settled).toBe('error');
    }
    expect(store.keys()).toEqual([]);
    expect(summaries[0]).toMatchObject({ deadlineReached: true, RecordsFailed: 5, RecordsDeadLettered: 1 });
    // A small tenant books nothing.
    expect(budgets.calls).toEqual([]);
  });

  it.each([
    ['a booked tenant', 12, true],
    ['a small tenant (no booking, a lane of its own)', 3, false],
  ])(
    'returns by its deadline when a storage call ignores its abort and never settles (%s)',
    async (_, n, booked) => {
      const store = new TrackingStore();
      // A request that neither answers nor honours its signal: the pool's drain would wait for it forever.
      let answer: () => void = () => undefined;
      const never = new Promise<void>((resolve) => {
        answer = resolve;
      });
      store.hook = () => never;
      const budgets = memoryBudgets();
      const { handler } = await setup(
        { WRITE_TIMEOUT_MS: '300', DEADLINE_MARGIN_MS: '800' },
        { store, budgets: budgets.factory },
      );
      const event = sqsEvent(records('acme', n));
      const started = Date.now();
      const response = await handler(event, lambdaContext(1_500));
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(failedIds(response)).toEqual(ids(event).sort());
      // The bookings were reported though the request is still out (it was aborted at the cutoff): each
      // retry of a timed-out write booked again, and each booking reports its round.
      expect(budgets.reports().length > 0).toBe(booked);
      answer(); // lets the test's close() drain
    },
  );

  it('starts nothing when the remaining time is already under the margin', async () => {
    const { handler, store } = await setup({ WRITE_TIMEOUT_MS: '500', DEADLINE_MARGIN_MS: '1000' });
    const event = sqsEvent(records('acme', 3));
    expect(failedIds(await handler(event, lambdaContext(900)))).toEqual(ids(event).sort());
    expect(store.calls).toEqual([]);
  });
});

describe('redelivery backoff by what stopped a record', () => {
  /** A visibility port recording the seconds each failed record was given. */
  function visibilities() {
    const seconds = new Map<string, number>();
    const port: VisibilityPort = {
      change: async (changes) => {
        for (const c of changes) seconds.set(c.messageId, c.visibilityTimeoutSeconds);
        return new Set();
      },
    };
    return { port, seconds };
  }

  it('a record the cutoff stopped (its turn came too late) comes back after the turn backoff, not the SlowDown one', async () => {
    const { port, seconds } = visibilities();
    const { handler } = await setup(
      { WRITE_TIMEOUT_MS: '800', DEADLINE_MARGIN_MS: '800' },
      { store: new TrackingStore({ model: latency(60_000) }), redeliveries: port },
    );
    const event = sqsEvent(records('acme', 2));
    expect(failedIds(await handler(event, lambdaContext(1_200)))).toEqual(ids(event).sort());
    expect([...seconds.values()]).toEqual([
      DEFAULT_REDELIVERY_BACKOFF.turnSeconds,
      DEFAULT_REDELIVERY_BACKOFF.turnSeconds,
    ]);
  });

  it('a record S3 kept refusing waits out the SlowDown backoff', async () => {
    const { port, seconds } = visibilities();
    const refusing = new S3BehaviourModel({ writesPerSecond: 0 });
    const { handler } = await setup(
      { WRITE_RETRIES: '1' },
      { store: new TrackingStore({ model: refusing }), redeliveries: port },
    );
    const event = sqsEvent(records('acme', 2));
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(ids(event).sort());
    expect([...seconds.values()]).toEqual([
      DEFAULT_REDELIVERY_BACKOFF.baseSeconds,
      DEFAULT_REDELIVERY_BACKOFF.baseSeconds,
    ]);
  });
});

describe("a prefix's rate schedule", () => {
  /** The start time of every PUT the store sees (performance.now ms). */
  function putStarts(store: TrackingStore): number[] {
    const starts: number[] = [];
    store.hook = (call) => {
      if (call.kind === 'put') starts.push(performance.now());
    };
    return starts;
  }

  it('a large tenant books its slots and writes no faster than its rate', async () => {
    const store = new TrackingStore({ model: latency(5) });
    const starts = putStarts(store);
    const budgets = memoryBudgets();
    // 100 writes/s: a slot every 10 ms.
    const { handler, summaries } = await setup(
      { POOL_CONCURRENCY: '16', S3_PREFIX_WRITE_RATE: '100' },
      { store, budgets: budgets.factory },
    );
    const event = sqsEvent(records('big', 15));
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.keys()).toHaveLength(15);
    expect(summaries[0]?.BookedWriteRate).toBe(100);
    // One slot per write (writes that fall behind their slots book again, for fewer).
    expect(budgets.books()[0]).toEqual({
      name: prefixOf('big'),
      options: expect.objectContaining({ writes: 15 }),
    });
    // 15 writes in slots 10 ms apart: the last starts at least 14 slots after the first (less the catch-up).
    expect(starts).toHaveLength(15);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(14 * 10 - SLOT_CATCH_UP_MS);
    // The schedule item was written at that rate, and the booking reported its writes.
    expect(budgets.table.item(prefixOf('big'))).toMatchObject({ rate: 100 });
    // One report per booking (more than one when writes fell behind their slots on a loaded host): together
    // they count the 15 writes, none refused.
    expect(reportedWrites(budgets.reports())).toEqual({ [prefixOf('big')]: { accepted: 15, throttled: 0 } });
  });

  it('a booking answered after its slots passed (a DynamoDB round trip longer than the slots) still writes the tenant before the cutoff', async () => {
    const store = new TrackingStore();
    // 12 writes at 3,500/s are 3.4 ms of slots (+ SLOT_CATCH_UP_MS); each booking's answer takes 30 ms more,
    // as a DynamoDB round trip on a loaded host (dynalite in the integration tests) does.
    const budgets = memoryBudgets({ booked: () => new Promise((resolve) => setTimeout(resolve, 30)) });
    const { handler, summaries } = await setup(
      { DEADLINE_MARGIN_MS: '1000', WRITE_TIMEOUT_MS: '1000' },
      { store, budgets: budgets.factory },
    );
    const response = await handler(sqsEvent(records('acme', 12)), lambdaContext(3_000));
    expect(summaries[0]!.splits.RecordsRedelivered).toEqual({});
    expect(failedIds(response)).toEqual([]);
    expect(store.keys()).toHaveLength(12);
  });

  it('small tenants write without a booking (no DynamoDB write), each pool at its writes', async () => {
    const store = new TrackingStore({ model: latency(15) });
    const budgets = memoryBudgets();
    const { handler, summaries } = await setup(
      { POOL_CONCURRENCY: '16' },
      { store, budgets: budgets.factory },
    );
    const event = sqsEvent([...records('s1', 3), ...records('s2', 3), ...records('s3', 3)]);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.keys()).toHaveLength(9);
    expect(budgets.made.size).toBe(0);
    expect(budgets.calls).toEqual([]);
    expect(summaries[0]?.BookedWriteRate).toBe(0);
    for (const tenant of ['s1', 's2', 's3'])
      expect(store.maxInFlightByTenant.get(tenant)).toBeLessThanOrEqual(3);
  });

  it('reports the booking when every write fails (none accepted)', async () => {
    const store = new TrackingStore();
    store.hook = () => {
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    };
    const budgets = memoryBudgets();
    const { handler } = await setup({}, { store, budgets: budgets.factory });
    const event = sqsEvent([...records('big', 10), ...records('small', 2)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(ids(event).sort());
    // Only the large tenant booked; the small one wrote (and failed) without a booking.
    expect([...budgets.made.keys()]).toEqual([prefixOf('big')]);
    expect(budgets.reports()).toEqual([
      { name: prefixOf('big'), report: { accepted: 0, throttled: 0, starved: false } },
    ]);
  });

  it("redelivers the writes of a tenant whose prefix's schedule is booked past its latest start, and writes the other tenants", async () => {
    const budgets = memoryBudgets();
    const { handler, store, config, summaries } = await setup(
      { WRITE_TIMEOUT_MS: '500', DEADLINE_MARGIN_MS: '500' },
      { budgets: budgets.factory },
    );
    // Another invocation booked the next minute of the prefix's slots.
    await budgets.bookAhead(prefixOf('blocked'), config.s3PrefixWriteRate, 60_000);
    const event = sqsEvent([...records('blocked', 10), ...records('free', 3)]);
    const started = Date.now();
    const response = await handler(event, lambdaContext(1_000));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(failedIds(response)).toEqual(ids(event).slice(0, 10).sort());
    expect(store.keys()).toEqual(records('free', 3).map((r) => keyOf('free', 'orders', r.id)));
    expect(summaries[0]!.splits.RecordsRedelivered).toEqual({ 'permits-unavailable': 10 });
  });

  it('redelivers a tenant whose budget is unreachable, and writes the others', async () => {
    const budgets = memoryBudgets({
      book: (name) => {
        if (name === prefixOf('down'))
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
    });
    const { handler, store } = await setup({}, { budgets: budgets.factory });
    const event = sqsEvent([...records('down', 10), ...records('up', 2)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(ids(event).slice(0, 10).sort());
    expect(store.keys()).toHaveLength(2);
  });
});

describe("a booking's report", () => {
  it("counts its own tenant's S3 writes apart from the reads beside them (the prefix limit is a write rate)", async () => {
    const budgets = memoryBudgets();
    const { handler, store } = await setup({}, { budgets: budgets.factory });
    // New records: each one a GET (absent) and a conditional PUT, so twice as many attempts as writes.
    const event = sqsEvent([...records('acme', 12), ...records('globex', 10)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual([]);
    expect(store.keys()).toHaveLength(22);
    expect(reportedWrites(budgets.reports())).toEqual({
      [prefixOf('acme')]: { accepted: 12, throttled: 0 },
      [prefixOf('globex')]: { accepted: 10, throttled: 0 },
    });
    expect(store.calls.filter((c) => c.key.startsWith('t=acme/')).length).toBeGreaterThan(12);
  });
});

describe('a failed rate report (issue 14, defect 3)', () => {
  it('changes no outcome: written records stay acknowledged, the step is lost, the failure is logged and counted', async () => {
    const reported: string[] = [];
    const budgets = memoryBudgets({
      report: (name) => {
        reported.push(name);
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
    });
    const logger = silentLogger();
    const warn = vi.spyOn(logger, 'warn');
    const { handler, store, summaries } = await setup({}, { budgets: budgets.factory, logger });
    // Two large tenants (each books its prefix's slots) and a small one (no booking): both reports fail.
    const event = sqsEvent([...records('big', 12), ...records('other', 10), ...records('small', 2)]);
    const response = await handler(event, lambdaContext(30_000));
    expect(response).toEqual({ batchItemFailures: [] });
    expect(store.keys()).toHaveLength(24);
    // Each large tenant's bookings report (one each, or more when writes fell behind their slots): all fail.
    expect([...new Set(reported)].sort()).toEqual([prefixOf('big'), prefixOf('other')]);
    expect(summaries[0]).toMatchObject({
      RecordsProcessed: 24,
      RecordsFailed: 0,
      rateReportFailures: reported.length,
    });
    const logged = warn.mock.calls.filter(([message]) => String(message).startsWith('rate report failed'));
    expect(logged.map(([, extra]) => (extra as { prefix: string }).prefix).sort()).toEqual(
      [...reported].sort(),
    );
  });
});
