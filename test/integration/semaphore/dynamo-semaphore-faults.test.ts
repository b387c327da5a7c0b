// DynamoSemaphore when DynamoDB fails in ways other than "condition failed", and when the caller's signal
// aborts at the worst moment: a throttled or refused request is an error the caller sees (never a silent
// "no room" that turns into a timeout, nor a release that claims success), and a rejected acquire holds
// nothing.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DynamoSemaphore,
  type DynamoSemaphoreOptions,
  LeaseLostError,
} from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';
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

function semaphore(faults: Faults, options: Partial<DynamoSemaphoreOptions> = {}) {
  const { client, calls } = faultInjecting(direct, faults);
  const sem = new DynamoSemaphore({
    client,
    tableName,
    name: `faults-${randomUUID().slice(0, 8)}`,
    limit: 4,
    backoffBaseMs: 5,
    backoffCapMs: 20,
    ...options,
  });
  return { sem, calls };
}

const used = async (name: string) => totalUsed(await storedShards(direct, tableName, name));

describe('DynamoSemaphore under non-conditional DynamoDB errors', () => {
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
      expect(await used(sem.name)).toBe(0);
    });
  }

  it('an acquire whose survey is throttled rejects with the throttling error', async () => {
    const { sem } = semaphore(failing('survey', throttled));
    await expect(sem.acquire(1, { deadline: Date.now() + 5_000 })).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
  });

  it('an acquire that cannot create a missing shard (throttled) rejects with that error', async () => {
    const { sem } = semaphore(failing('create', throttled));
    await expect(sem.acquire(1, { deadline: Date.now() + 5_000 })).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
  });

  it('an acquire whose second take is throttled gives back the first take before rejecting', async () => {
    let takes = 0;
    const { sem } = semaphore(
      {
        before: (call) => {
          if (operationOf(call) === 'take' && ++takes === 2) throw throttled();
        },
      },
      { shards: 2, random: () => 0 },
    );
    // Both shard items exist, so the blind take on shard 0 lands and the rest needs a second take.
    await (
      await new DynamoSemaphore({ client: direct, tableName, name: sem.name, limit: 4, shards: 2 }).acquire(1)
    ).release();
    await expect(sem.acquire(4)).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(takes).toBe(2);
    const shards = await storedShards(direct, tableName, sem.name);
    expect(totalUsed(shards)).toBe(0);
    expect(shards.flatMap((s) => Object.keys(s.holders))).toEqual([]);
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
    failNext = true;
    await expect(lease.release()).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(await used(sem.name)).toBe(3);
    await lease.release();
    expect(await used(sem.name)).toBe(0);
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

  it('extend on a released lease is LeaseLostError; extend of a live lease moves every shard it spans', async () => {
    let clock = 1_000_000;
    const { sem } = semaphore({}, { limit: 4, shards: 2, now: () => clock, leaseMs: 1_000 });
    const lease = await sem.acquire(4);
    clock += 500;
    await lease.extend(2_000);
    expect(lease.expiresAt).toBe(clock + 2_000);
    const shards = await storedShards(direct, tableName, sem.name);
    expect(shards.map((s) => s.holders[lease.fence]!.until)).toEqual([clock + 2_000, clock + 2_000]);
    await lease.release();
    await expect(lease.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
  });
});

describe('DynamoSemaphore and its caller signal', () => {
  it('an abort that arrives while the winning take is in flight rejects with the reason and gives the take back', async () => {
    const controller = new AbortController();
    const reason = new Error('invocation cutoff');
    const { sem } = semaphore({
      after: (call) => {
        if (operationOf(call) === 'take') controller.abort(reason);
      },
    });
    await expect(sem.acquire(3, { signal: controller.signal })).rejects.toBe(reason);
    const shards = await storedShards(direct, tableName, sem.name);
    expect(totalUsed(shards)).toBe(0);
    expect(shards.flatMap((s) => Object.keys(s.holders))).toEqual([]);
  });

  it("an acquire's own backoffCapMs shortens the wait between rounds, never lengthens it", async () => {
    const { sem: holder } = semaphore({});
    const held = await holder.acquire(4);
    // 800 ms: a 10 ms cap reads more than 5 times even with round trips of 120 ms on a loaded machine; the
    // 60 s waits read at most twice whatever the deadline.
    const surveys = async (backoffCapMs?: number) => {
      const { sem, calls } = semaphore(
        {},
        { name: holder.name, backoffBaseMs: 60_000, backoffCapMs: 60_000, random: () => 0.5 },
      );
      const options = backoffCapMs === undefined ? {} : { backoffCapMs };
      await expect(sem.acquire(1, { deadline: Date.now() + 800, ...options })).rejects.toMatchObject({
        name: 'SemaphoreTimeoutError',
      });
      return calls.filter((c) => operationOf(c) === 'survey').length;
    };
    expect(await surveys()).toBeLessThanOrEqual(2);
    expect(await surveys(10)).toBeGreaterThan(5);
    expect(await surveys(120_000)).toBeLessThanOrEqual(2);
    await held.release();
  });

  it('an abort during the backoff between attempts rejects at once with the reason and holds nothing', async () => {
    const { sem: holder } = semaphore({});
    const held = await holder.acquire(4);
    const controller = new AbortController();
    const reason = new Error('cutoff while waiting');
    const { client } = faultInjecting(direct, {
      // The survey found no room: the waiter is about to back off for ~30 s.
      after: (call) => {
        if (operationOf(call) === 'survey') setTimeout(() => controller.abort(reason), 1);
      },
    });
    const waiter = new DynamoSemaphore({
      client,
      tableName,
      name: holder.name,
      limit: 4,
      backoffBaseMs: 60_000,
      backoffCapMs: 60_000,
      random: () => 0.5,
    });
    const started = Date.now();
    await expect(waiter.acquire(1, { signal: controller.signal })).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await used(holder.name)).toBe(4);
    await held.release();
  });
});

describe('DynamoSemaphore reclaiming expired holders', () => {
  const reclaims = (calls: readonly DynamoCall[]) => calls.filter((c) => operationOf(c) === 'reclaim');

  it('reclaims every expired holder of a shard in one write and frees the sum of their permits', async () => {
    let clock = 5_000_000;
    const now = () => clock;
    const name = `reclaim-${randomUUID().slice(0, 8)}`;
    const old = new DynamoSemaphore({ client: direct, tableName, name, limit: 4, leaseMs: 1_000, now });
    const a = await old.acquire(1);
    const b = await old.acquire(2);
    clock += 100;
    const live = await new DynamoSemaphore({
      client: direct,
      tableName,
      name,
      limit: 4,
      leaseMs: 60_000,
      now,
    }).acquire(1);
    clock += 1_000; // a and b expired (until < now), live did not
    const { client, calls } = faultInjecting(direct);
    const fresh = new DynamoSemaphore({ client, tableName, name, limit: 4, now });
    const lease = await fresh.acquire(3, { deadline: clock });
    expect(lease.permits).toBe(3);
    expect(reclaims(calls)).toHaveLength(1);
    const [shard] = await storedShards(direct, tableName, name);
    expect(shard!.used).toBe(4);
    expect(new Set(Object.keys(shard!.holders))).toEqual(new Set([live.fence, lease.fence]));
    await expect(a.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(b.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('a holder is reclaimable only after its expiry instant, not at it', async () => {
    let clock = 7_000_000;
    const now = () => clock;
    const name = `expiry-${randomUUID().slice(0, 8)}`;
    const old = await new DynamoSemaphore({
      client: direct,
      tableName,
      name,
      limit: 1,
      leaseMs: 1_000,
      now,
    }).acquire(1);
    const other = new DynamoSemaphore({ client: direct, tableName, name, limit: 1, now });
    clock = old.expiresAt;
    await expect(other.acquire(1, { deadline: clock })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    clock += 1;
    const lease = await other.acquire(1, { deadline: clock });
    expect(lease.permits).toBe(1);
    await lease.release();
  });

  it('more than 25 expired holders are reclaimed in writes of at most 25, and all of them come back', async () => {
    let clock = 9_000_000;
    const now = () => clock;
    const name = `many-${randomUUID().slice(0, 8)}`;
    const old = new DynamoSemaphore({ client: direct, tableName, name, limit: 30, leaseMs: 1_000, now });
    for (let i = 0; i < 30; i++) await old.acquire(1);
    clock += 1_001;
    const { client, calls } = faultInjecting(direct);
    const fresh = new DynamoSemaphore({
      client,
      tableName,
      name,
      limit: 30,
      now,
      backoffBaseMs: 1,
      backoffCapMs: 2,
    });
    const lease = await fresh.acquire(30, { deadline: clock + 1 });
    expect(lease.permits).toBe(30);
    const writes = reclaims(calls);
    expect(writes.length).toBeGreaterThanOrEqual(2);
    for (const write of writes) {
      const removed = (write.input.UpdateExpression ?? '').split(' SET ')[0]!.split(',').length;
      expect(removed).toBeLessThanOrEqual(25);
    }
    const [shard] = await storedShards(direct, tableName, name);
    expect(shard!.used).toBe(30);
    expect(Object.keys(shard!.holders)).toEqual([lease.fence]);
    await lease.release();
  });

  it('a holder that extends between the survey and the reclaim keeps its permits', async () => {
    let clock = 11_000_000;
    const now = () => clock;
    const name = `race-${randomUUID().slice(0, 8)}`;
    const holder = await new DynamoSemaphore({
      client: direct,
      tableName,
      name,
      limit: 2,
      leaseMs: 1_000,
      now,
    }).acquire(2);
    clock += 1_001;
    const { client } = faultInjecting(direct, {
      // The survey has read the expired entry; the holder extends before the reclaim write is sent.
      before: async (call) => {
        if (operationOf(call) === 'reclaim') await holder.extend(60_000);
      },
    });
    const racing = new DynamoSemaphore({ client, tableName, name, limit: 2, now });
    await expect(racing.acquire(1, { deadline: clock })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    const [shard] = await storedShards(direct, tableName, name);
    expect(shard!.used).toBe(2);
    expect(shard!.holders[holder.fence]!.until).toBe(clock + 60_000);
    await holder.release();
  });
});

describe('DynamoSemaphore backoff', () => {
  it('the wait between attempts grows while permits stay short (full jitter under a doubling ceiling)', async () => {
    const { sem: holder } = semaphore({});
    const held = await holder.acquire(4);
    const { client, calls } = faultInjecting(direct);
    const waiter = new DynamoSemaphore({
      client,
      tableName,
      name: holder.name,
      limit: 4,
      backoffBaseMs: 10,
      backoffCapMs: 10_000,
      random: () => 0.999,
    });
    // Ceilings 10, 20, 40, 80, 160, 320 ms: seven surveys take at least ~620 ms of backoff.
    const surveysAt = () => calls.filter((c) => operationOf(c) === 'survey').map((c) => c.sentAt);
    const controller = new AbortController();
    const waiting = waiter.acquire(1, { signal: controller.signal });
    while (surveysAt().length < 7) await new Promise((resolve) => setTimeout(resolve, 20));
    const reason = new Error('enough');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    const at = surveysAt();
    // Lower bounds only (a loaded machine makes gaps longer, never shorter): the 6th wait alone is >= 319 ms.
    expect(at[6]! - at[5]!).toBeGreaterThanOrEqual(300);
    expect(at[5]! - at[4]!).toBeGreaterThanOrEqual(150);
    await held.release();
  });
});

describe('DynamoSemaphore writes, precisely', () => {
  const takes = (calls: readonly DynamoCall[]) => calls.filter((c) => operationOf(c) === 'take');

  it('a round that finds less than min free makes no take after its blind one', async () => {
    const { sem: holder } = semaphore({});
    const held = await holder.acquire(3);
    const { client, calls } = faultInjecting(direct);
    const waiter = new DynamoSemaphore({ client, tableName, name: holder.name, limit: 4 });
    await expect(waiter.acquire(2, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    // The blind take (2 of the shard's 4) fails its condition; the survey finds 1 free: no more takes.
    expect(takes(calls)).toHaveLength(1);
    expect(await used(holder.name)).toBe(3);
    await held.release();
  });

  it('a take that fails with an error gives back exactly what it attempted', async () => {
    const { sem, calls } = semaphore(failing('take', throttled));
    await expect(sem.acquire(2)).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(calls.filter((c) => operationOf(c) === 'give-back').map((c) => c.input.Key?.sk?.S)).toEqual([
      'shard#0',
    ]);
  });

  it('extend while a release is in flight is LeaseLostError without a request', async () => {
    const { sem, calls } = semaphore({});
    const lease = await sem.acquire(1);
    const releasing = lease.release();
    await expect(lease.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
    await releasing;
    expect(calls.filter((c) => operationOf(c) === 'extend')).toEqual([]);
  });
});
