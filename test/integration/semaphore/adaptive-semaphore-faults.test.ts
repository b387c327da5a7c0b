// AdaptiveDynamoSemaphore (the handler's prefix semaphores) when DynamoDB fails in ways other than
// "condition failed", when the caller's signal aborts at the worst moment, and when holders expire: a
// throttled or refused request is an error the caller sees, a rejected acquire holds nothing, expired
// holders come back (one write for many, at most 25 per write), a holder that extended keeps its permits.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptiveDynamoSemaphore,
  type AdaptiveDynamoSemaphoreOptions,
  LeaseLostError,
} from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';
import {
  type DynamoCall,
  type Faults,
  failing,
  faultInjecting,
  operationOf,
  refused,
  throttled,
} from './support/fault-injecting-client.js';

let direct: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client: direct, tableName } = await semaphoreTable());
});

// 200/s x 20 ms = 4 permits on one shard, hard cap 40.
const options = (name: string, over: Partial<AdaptiveDynamoSemaphoreOptions> = {}) => ({
  client: direct,
  tableName,
  name,
  limit: 40,
  adaptive: { ratePerSecond: 200, initialLatencyMs: 20 },
  backoffBaseMs: 5,
  backoffCapMs: 20,
  ...over,
});

function semaphore(faults: Faults, over: Partial<AdaptiveDynamoSemaphoreOptions> = {}) {
  const { client, calls } = faultInjecting(direct, faults);
  const name = over.name ?? `adaptive-faults-${randomUUID().slice(0, 8)}`;
  return { sem: new AdaptiveDynamoSemaphore(options(name, { ...over, client })), calls };
}

const shards = (name: string) => storedAdaptiveShards(direct, tableName, name);
const held = async (name: string) => (await shards(name)).reduce((sum, s) => sum + s.held, 0);
const free = async (name: string) => (await shards(name)).reduce((sum, s) => sum + s.free, 0);

describe('AdaptiveDynamoSemaphore under non-conditional DynamoDB errors', () => {
  for (const [what, error] of [
    ['throttled', throttled],
    ['refused (ValidationException)', refused],
  ] as const) {
    it(`an acquire whose take is ${what} rejects with that error at once, not with a timeout, and holds nothing`, async () => {
      const { sem } = semaphore(failing('take', error));
      const started = Date.now();
      const err = await sem.acquire(2, { deadline: started + 5_000 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: error().name });
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(await held(sem.name)).toBe(0);
      expect(await free(sem.name)).toBe(4);
    });
  }

  it('an acquire whose survey or shard creation is throttled rejects with the throttling error', async () => {
    for (const operation of ['survey', 'create'] as const) {
      const { sem } = semaphore(failing(operation, throttled));
      await expect(sem.acquire(1, { deadline: Date.now() + 5_000 })).rejects.toMatchObject({
        name: 'ProvisionedThroughputExceededException',
      });
    }
  });

  it('an acquire whose second take is throttled gives back the first take before rejecting', async () => {
    const name = `adaptive-span-${randomUUID().slice(0, 8)}`;
    // Two shards of 2 permits: a grant of 4 spans both.
    await (await new AdaptiveDynamoSemaphore(options(name, { shards: 2 })).acquire(1)).release();
    let takes = 0;
    const { sem } = semaphore(
      {
        before: (call) => {
          if (operationOf(call) === 'take' && ++takes === 2) throw throttled();
        },
      },
      { name, shards: 2 },
    );
    await expect(sem.acquire(4)).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(takes).toBe(2);
    const stored = await shards(name);
    expect(stored.map((s) => [s.held, s.free])).toEqual([
      [0, 2],
      [0, 2],
    ]);
  });

  it('a release whose give-back is throttled rejects; the permits stay held, and a second release frees them', async () => {
    let failNext = false;
    const { sem } = semaphore({
      before: (call) => {
        if (failNext && operationOf(call) === 'give-back') {
          failNext = false;
          throw throttled();
        }
      },
    });
    const lease = await sem.acquire(3);
    lease.report?.({ succeeded: 3, throttled: 0 });
    failNext = true;
    await expect(lease.release()).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(await held(sem.name)).toBe(3);
    await lease.release();
    expect(await held(sem.name)).toBe(0);
  });

  it('an extend whose write is throttled rejects with the throttling error, not LeaseLostError, and keeps the expiry', async () => {
    const { sem } = semaphore(failing('extend', throttled), { leaseMs: 10_000 });
    const lease = await sem.acquire(2);
    const expiresAt = lease.expiresAt;
    const err = await lease.extend(60_000).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(LeaseLostError);
    expect(err).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(lease.expiresAt).toBe(expiresAt);
    await lease.release();
  });

  it('extend of a live lease moves every shard it spans; on a released lease it is LeaseLostError', async () => {
    let clock = 1_000_000;
    const { sem } = semaphore({}, { shards: 2, now: () => clock, leaseMs: 1_000 });
    const lease = await sem.acquire(4);
    expect(lease.expiresAt).toBe(clock + 1_000);
    clock += 500;
    await lease.extend(2_000);
    expect(lease.expiresAt).toBe(clock + 2_000);
    const stored = await shards(sem.name);
    expect(stored.map((s) => s.holders[lease.fence]?.until)).toEqual([clock + 2_000, clock + 2_000]);
    await lease.release();
    await expect(lease.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('extend of a reclaimed lease is LeaseLostError and gives nothing back', async () => {
    let clock = 2_000_000;
    const name = `adaptive-lost-${randomUUID().slice(0, 8)}`;
    const now = () => clock;
    const lease = await new AdaptiveDynamoSemaphore(options(name, { now, leaseMs: 1_000 })).acquire(4);
    clock += 1_001;
    const taker = await new AdaptiveDynamoSemaphore(options(name, { now })).acquire(4, { deadline: clock });
    await expect(lease.extend(5_000)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await held(name)).toBe(4);
    await taker.release();
  });
});

describe('AdaptiveDynamoSemaphore lease length', () => {
  it("a lease lasts the acquire's leaseMs, else the semaphore's, from the round that won it", async () => {
    let clock = 3_000_000;
    const { sem } = semaphore({}, { now: () => clock, leaseMs: 4_000 });
    const byDefault = await sem.acquire(1);
    expect(byDefault.expiresAt).toBe(clock + 4_000);
    clock += 10;
    const given = await sem.acquire(1, { leaseMs: 700 });
    expect(given.expiresAt).toBe(clock + 700);
    const stored = await shards(sem.name);
    expect(stored[0]?.holders[given.fence]?.until).toBe(clock + 700);
    expect(stored[0]?.holders[byDefault.fence]?.until).toBe(clock - 10 + 4_000);
  });
});

describe('AdaptiveDynamoSemaphore and its caller signal', () => {
  it('an abort that arrives while the winning take is in flight rejects with the reason and gives the take back', async () => {
    const controller = new AbortController();
    const reason = new Error('invocation cutoff');
    const { sem } = semaphore({
      after: (call) => {
        if (operationOf(call) === 'take') controller.abort(reason);
      },
    });
    await expect(sem.acquire(3, { signal: controller.signal })).rejects.toBe(reason);
    const stored = await shards(sem.name);
    expect(stored.map((s) => [s.held, s.free, Object.keys(s.holders).length])).toEqual([[0, 4, 0]]);
  });

  it("an acquire's own backoffCapMs makes it poll more often than the semaphore's cap, never less", async () => {
    const name = `adaptive-hurry-${randomUUID().slice(0, 8)}`;
    const holder = await new AdaptiveDynamoSemaphore(options(name)).acquire(4);
    const surveysWithin = async (backoffCapMs: number | undefined) => {
      const { sem, calls } = semaphore(
        {},
        { name, backoffBaseMs: 60_000, backoffCapMs: 60_000, random: () => 0.5 },
      );
      await expect(
        sem.acquire(1, {
          deadline: Date.now() + 300,
          ...(backoffCapMs === undefined ? {} : { backoffCapMs }),
        }),
      ).rejects.toMatchObject({ name: 'SemaphoreTimeoutError' });
      return calls.filter((c) => operationOf(c) === 'survey').length;
    };
    // The semaphore's cap: one round, a 30 s backoff cut at the deadline, one last round.
    expect(await surveysWithin(undefined)).toBeLessThanOrEqual(2);
    // 10 ms (a 5 ms wait at random 0.5): many rounds within 300 ms.
    expect(await surveysWithin(10)).toBeGreaterThan(5);
    // Longer than the semaphore's cap, or nonsense: the semaphore's cap.
    expect(await surveysWithin(120_000)).toBeLessThanOrEqual(2);
    expect(await surveysWithin(0)).toBeLessThanOrEqual(2);
    await holder.release();
  });

  it('an abort during the backoff between attempts rejects at once with the reason and holds nothing', async () => {
    const name = `adaptive-wait-${randomUUID().slice(0, 8)}`;
    const holder = await new AdaptiveDynamoSemaphore(options(name)).acquire(4);
    const controller = new AbortController();
    const reason = new Error('cutoff while waiting');
    const { sem } = semaphore(
      {
        after: (call) => {
          if (operationOf(call) === 'survey') setTimeout(() => controller.abort(reason), 1);
        },
      },
      { name, backoffBaseMs: 60_000, backoffCapMs: 60_000, random: () => 0.5 },
    );
    const started = Date.now();
    await expect(sem.acquire(1, { signal: controller.signal })).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await held(name)).toBe(4);
    await holder.release();
  });
});

describe('AdaptiveDynamoSemaphore reclaiming expired holders', () => {
  const reclaims = (calls: readonly DynamoCall[]) => calls.filter((c) => operationOf(c) === 'reclaim');

  it('reclaims every expired holder of a shard in one write, frees the sum of their permits, not at the expiry instant', async () => {
    let clock = 5_000_000;
    const now = () => clock;
    const name = `adaptive-reclaim-${randomUUID().slice(0, 8)}`;
    const old = new AdaptiveDynamoSemaphore(options(name, { now, leaseMs: 1_000 }));
    const a = await old.acquire(1);
    const b = await old.acquire(2);
    clock += 100;
    const live = await new AdaptiveDynamoSemaphore(options(name, { now, leaseMs: 60_000 })).acquire(1);
    const { sem: fresh, calls } = semaphore({}, { name, now });
    clock = b.expiresAt; // at the instant: not reclaimable yet
    await expect(fresh.acquire(3, { deadline: clock })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(reclaims(calls)).toHaveLength(0);
    clock += 1; // a and b expired (until < now), live did not
    const lease = await fresh.acquire(3, { deadline: clock });
    expect(lease.permits).toBe(3);
    expect(reclaims(calls)).toHaveLength(1);
    const [shard] = await shards(name);
    expect(shard).toMatchObject({ held: 4, free: 0 });
    expect(new Set(Object.keys(shard!.holders))).toEqual(new Set([live.fence, lease.fence]));
    await expect(a.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(b.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('more than 25 expired holders are reclaimed in writes of at most 25, and all of them come back', async () => {
    let clock = 9_000_000;
    const now = () => clock;
    const name = `adaptive-many-${randomUUID().slice(0, 8)}`;
    // 1500/s x 20 ms = 30 permits on one shard.
    const adaptive = { ratePerSecond: 1_500, initialLatencyMs: 20 };
    const old = new AdaptiveDynamoSemaphore(options(name, { adaptive, now, leaseMs: 1_000 }));
    for (let i = 0; i < 30; i++) await old.acquire(1);
    clock += 1_001;
    const { sem: fresh, calls } = semaphore({}, { name, adaptive, now, backoffBaseMs: 1, backoffCapMs: 2 });
    const lease = await fresh.acquire(30, { deadline: clock + 1 });
    expect(lease.permits).toBe(30);
    const writes = reclaims(calls);
    expect(writes.length).toBeGreaterThanOrEqual(2);
    for (const write of writes) {
      const removed = (write.input.UpdateExpression ?? '').split(' SET ')[0]!.split(',').length;
      expect(removed).toBeLessThanOrEqual(25);
    }
    const [shard] = await shards(name);
    expect(shard).toMatchObject({ held: 30, free: 0, capacity: 30 });
    expect(Object.keys(shard!.holders)).toEqual([lease.fence]);
    await lease.release();
  });

  it('a holder that extends between the survey and the reclaim keeps its permits', async () => {
    let clock = 11_000_000;
    const now = () => clock;
    const name = `adaptive-race-${randomUUID().slice(0, 8)}`;
    const holder = await new AdaptiveDynamoSemaphore(options(name, { now, leaseMs: 1_000 })).acquire(4);
    clock += 1_001;
    const { sem: racing } = semaphore(
      {
        before: async (call) => {
          if (operationOf(call) === 'reclaim') await holder.extend(60_000);
        },
      },
      { name, now },
    );
    await expect(racing.acquire(1, { deadline: clock })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    const [shard] = await shards(name);
    expect(shard).toMatchObject({ held: 4, free: 0 });
    expect(shard!.holders[holder.fence]!.until).toBe(clock + 60_000);
    await holder.release();
  });
});

describe('AdaptiveDynamoSemaphore hard cap', () => {
  it("never grants more than `limit` fleet-wide, even when Little's law starts above it", async () => {
    const name = `adaptive-cap-${randomUUID().slice(0, 8)}`;
    // 1000/s x 20 ms = 20 permits by Little's law; the hard cap is 3.
    const adaptive = { ratePerSecond: 1_000, initialLatencyMs: 20 };
    const first = await new AdaptiveDynamoSemaphore(options(name, { limit: 3, adaptive })).acquire(3);
    const second = new AdaptiveDynamoSemaphore(options(name, { limit: 3, adaptive }));
    await expect(second.acquire(1, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(await shards(name)).toMatchObject([{ capacity: 3, free: 0, held: 3 }]);
    await first.release();
  });

  it('split over shards, the cap holds for their sum: each shard starts at limit / shards', async () => {
    const name = `adaptive-cap-split-${randomUUID().slice(0, 8)}`;
    const adaptive = { ratePerSecond: 1_000, initialLatencyMs: 20 };
    const sem = new AdaptiveDynamoSemaphore(options(name, { limit: 4, shards: 2, adaptive }));
    const first = await sem.acquire(1);
    const rest = await sem.acquire(4, { min: 1 });
    expect(rest.permits).toBe(3);
    expect((await shards(name)).map((s) => s.capacity)).toEqual([2, 2]);
    await expect(sem.acquire(1, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    // A starved holder measuring a long latency (ceiling far above) grows no shard past its share of the cap.
    rest.report?.({ succeeded: 10, throttled: 0, attemptMs: 10_000 });
    await Promise.all([rest.release(), first.release()]);
    expect((await shards(name)).map((s) => s.capacity)).toEqual([2, 2]);
  });

  it('a release never moves the limit above the hard cap', async () => {
    let clock = 20_000_000;
    const { sem } = semaphore({}, { limit: 5, now: () => clock });
    // Starts at 4 (200/s x 20 ms); a starved holder with a long measured latency would grow it past 5.
    for (let i = 0; i < 4; i++) {
      const lease = await sem.acquire(5, { min: 1 });
      clock += 1_000;
      lease.report?.({ succeeded: 10, throttled: 0, attemptMs: 10_000 });
      await lease.release();
    }
    const [shard] = await shards(sem.name);
    expect(shard!.capacity).toBe(5);
    expect(shard!.free).toBe(5);
  });
});
