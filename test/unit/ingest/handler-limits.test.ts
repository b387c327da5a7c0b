import { afterEach, describe, expect, it, vi } from 'vitest';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import {
  DEFAULT_REDELIVERY_BASE_SECONDS,
  DEFAULT_REDELIVERY_TURN_SECONDS,
  type VisibilityPort,
} from '../../../lib/ingest/handler/settle/redelivery-backoff.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import type { LeaseUsage, Semaphore } from '../../../lib/semaphore/types.js';
import {
  failedIds,
  ids,
  keyOf,
  lambdaContext,
  memorySemaphores,
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

const semaphores = memorySemaphores;

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

describe('deadline', () => {
  it('stops before the Lambda timeout, aborts in-flight writes and reports everything unfinished', async () => {
    const store = new TrackingStore({ model: latency(60_000) });
    const sem = semaphores(10);
    const { handler, summaries, deadLetters } = await setup(
      { WRITE_TIMEOUT_MS: '800', DEADLINE_MARGIN_MS: '800', POOL_CONCURRENCY: '8' },
      { store, semaphores: sem.factory },
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
    for (const s of sem.made.values()) expect(s.available).toBe(10);
  });

  it.each([
    ['a leased tenant', 12],
    ['a small tenant (no lease, a lane of its own)', 3],
  ])('returns by its deadline when a storage call ignores its abort and never settles (%s)', async (_, n) => {
    const store = new TrackingStore();
    // A request that neither answers nor honours its signal: the pool's drain would wait for it forever.
    let answer: () => void = () => undefined;
    const never = new Promise<void>((resolve) => {
      answer = resolve;
    });
    store.hook = () => never;
    const sem = semaphores(10);
    const { handler } = await setup(
      { WRITE_TIMEOUT_MS: '300', DEADLINE_MARGIN_MS: '800' },
      { store, semaphores: sem.factory },
    );
    const event = sqsEvent(records('acme', n));
    const started = Date.now();
    const response = await handler(event, lambdaContext(1_500));
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(failedIds(response)).toEqual(ids(event).sort());
    // The lease was given back though the request is still out (it was aborted at the cutoff).
    for (const s of sem.made.values()) expect(s.available).toBe(10);
    answer(); // lets the test's close() drain
  });

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
    expect([...seconds.values()]).toEqual([DEFAULT_REDELIVERY_TURN_SECONDS, DEFAULT_REDELIVERY_TURN_SECONDS]);
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
    expect([...seconds.values()]).toEqual([DEFAULT_REDELIVERY_BASE_SECONDS, DEFAULT_REDELIVERY_BASE_SECONDS]);
  });
});

describe('semaphore permits', () => {
  it('sizes a large tenant pool to its grant and releases the permits afterwards', async () => {
    const store = new TrackingStore({ model: latency(15) });
    const sem = semaphores(3);
    const { handler, summaries } = await setup(
      { POOL_CONCURRENCY: '16' },
      { store, semaphores: sem.factory },
    );
    const event = sqsEvent(records('big', 15));
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.maxInFlightByTenant.get('big')).toBe(3);
    expect(store.keys()).toHaveLength(15);
    expect(summaries[0]?.BookedWriteRate).toBe(3);
    expect([...sem.made.keys()]).toEqual(['prefix:ignored-by-memory-store/t=big/']);
    expect(sem.made.get('prefix:ignored-by-memory-store/t=big/')?.available).toBe(3);
  });

  it('small tenants write without a lease (no DynamoDB write), each pool at its writes', async () => {
    const store = new TrackingStore({ model: latency(15) });
    const sem = semaphores(2);
    const { handler, summaries } = await setup(
      { POOL_CONCURRENCY: '16' },
      { store, semaphores: sem.factory },
    );
    const event = sqsEvent([...records('s1', 3), ...records('s2', 3), ...records('s3', 3)]);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.keys()).toHaveLength(9);
    expect(sem.made.size).toBe(0);
    expect(summaries[0]?.BookedWriteRate).toBe(0);
    for (const tenant of ['s1', 's2', 's3'])
      expect(store.maxInFlightByTenant.get(tenant)).toBeLessThanOrEqual(3);
  });

  it('releases the permits when every write fails', async () => {
    const store = new TrackingStore();
    store.hook = () => {
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    };
    const sem = semaphores(4);
    const { handler } = await setup({}, { store, semaphores: sem.factory });
    const event = sqsEvent([...records('big', 10), ...records('small', 2)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(ids(event).sort());
    // Only the large tenant took a lease; the small one wrote (and failed) without one.
    expect(sem.made.size).toBe(1);
    for (const s of sem.made.values()) expect(s.available).toBe(4);
  });

  it('redelivers the writes of a tenant whose permits never come, and writes the other tenants', async () => {
    const sem = semaphores(2);
    const blocked = sem.factory('prefix:ignored-by-memory-store/t=blocked/');
    const holder = await blocked.acquire(2, { leaseMs: 60_000 });
    try {
      const { handler, store } = await setup(
        { WRITE_TIMEOUT_MS: '500', DEADLINE_MARGIN_MS: '500' },
        { semaphores: sem.factory },
      );
      const event = sqsEvent([...records('blocked', 10), ...records('free', 3)]);
      const started = Date.now();
      const response = await handler(event, lambdaContext(1_000));
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(failedIds(response)).toEqual(ids(event).slice(0, 10).sort());
      expect(store.keys()).toEqual(records('free', 3).map((r) => keyOf('free', 'orders', r.id)));
    } finally {
      await holder.release();
    }
  });

  it('redelivers a tenant whose semaphore is unreachable, and writes the others', async () => {
    const sem = semaphores(8);
    const factory = (name: string, limit: number): Semaphore =>
      name.includes('t=down/')
        ? {
            name,
            limit,
            acquire: () =>
              Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
          }
        : sem.factory(name);
    const { handler, store } = await setup({}, { semaphores: factory });
    const event = sqsEvent([...records('down', 10), ...records('up', 2)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(ids(event).slice(0, 10).sort());
    expect(store.keys()).toHaveLength(2);
  });
});

describe("a lease's usage report", () => {
  it("counts its own tenant's S3 writes apart from the reads beside them (the prefix limit is a write rate)", async () => {
    const sem = semaphores(8);
    const reports: { name: string; usage: LeaseUsage }[] = [];
    const factory = (name: string): Semaphore => {
      const inner = sem.factory(name);
      return {
        name,
        limit: inner.limit,
        acquire: async (k, options) => {
          const lease = await inner.acquire(k, options);
          return {
            permits: lease.permits,
            fence: lease.fence,
            expiresAt: lease.expiresAt,
            extend: (ms) => lease.extend(ms),
            release: () => lease.release(),
            report: (usage: LeaseUsage) => reports.push({ name, usage }),
          };
        },
      };
    };
    const { handler, store } = await setup({}, { semaphores: factory });
    // New records: each one a GET (absent) and a conditional PUT, so twice as many attempts as writes.
    const event = sqsEvent([...records('acme', 12), ...records('globex', 10)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual([]);
    expect(store.keys()).toHaveLength(22);
    const byTenant = Object.fromEntries(reports.map((r) => [r.name.split('/t=')[1], r.usage]));
    expect(byTenant['acme/']).toMatchObject({ writes: 12, throttled: 0 });
    expect(byTenant['globex/']).toMatchObject({ writes: 10, throttled: 0 });
    expect(byTenant['acme/']!.succeeded).toBeGreaterThan(12);
  });
});

describe('a failed lease release (issue 14, defect 3)', () => {
  it('changes no outcome: written records stay acknowledged, the lease is left to expire, the failure is logged and counted', async () => {
    const sem = semaphores(8);
    const released: string[] = [];
    const factory = (name: string, limit: number): Semaphore => {
      const inner = sem.factory(name);
      return {
        name,
        limit,
        acquire: async (k, options) => {
          const lease = await inner.acquire(k, options);
          return {
            ...lease,
            permits: lease.permits,
            release: async () => {
              released.push(name);
              throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
            },
          };
        },
      };
    };
    const logger = silentLogger();
    const warn = vi.spyOn(logger, 'warn');
    const { handler, store, summaries } = await setup({}, { semaphores: factory, logger });
    // Two large tenants (each its own prefix lease) and a small one (no lease): both releases fail.
    const event = sqsEvent([...records('big', 12), ...records('other', 10), ...records('small', 2)]);
    const response = await handler(event, lambdaContext(30_000));
    expect(response).toEqual({ batchItemFailures: [] });
    expect(store.keys()).toHaveLength(24);
    expect(released.sort()).toEqual([
      'prefix:ignored-by-memory-store/t=big/',
      'prefix:ignored-by-memory-store/t=other/',
    ]);
    expect(summaries[0]).toMatchObject({ RecordsProcessed: 24, RecordsFailed: 0, rateReportFailures: 2 });
    const logged = warn.mock.calls.filter(([message]) => String(message).startsWith('permit release failed'));
    expect(logged.map(([, extra]) => (extra as { semaphore: string }).semaphore).sort()).toEqual(released);
  });
});
