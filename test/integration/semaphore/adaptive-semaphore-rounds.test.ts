// How one AdaptiveDynamoSemaphore round spends its writes (dynalite): the default shard count, adopting a
// stored one, a grant that fits one shard is one take on the shard the random start picks, a larger one
// takes from the roomiest shards in turn, never from a full one.
import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AdaptiveDynamoSemaphore,
  type AdaptiveDynamoSemaphoreOptions,
  InvalidSemaphoreOptionsError,
  LeaseLostError,
} from '../../../lib/semaphore/index.js';
import { semaphoreItems, semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';
import {
  type DynamoCall,
  type Faults,
  faultInjecting,
  operationOf,
} from './support/fault-injecting-client.js';

let direct: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client: direct, tableName } = await semaphoreTable());
});

// 200/s x 20 ms = 4 permits, 2 per shard over two shards.
function semaphore(name: string, over: Partial<AdaptiveDynamoSemaphoreOptions> = {}, faults: Faults = {}) {
  const { client, calls } = faultInjecting(direct, faults);
  const sem = new AdaptiveDynamoSemaphore({
    client,
    tableName,
    name,
    limit: 40,
    shards: 2,
    adaptive: { ratePerSecond: 200, initialLatencyMs: 20 },
    backoffBaseMs: 5,
    backoffCapMs: 20,
    ...over,
  });
  return { sem, calls };
}

/** Writes adaptive shard item `index` of `name` as a test needs it (no holders, never decreased). */
function putShard(
  name: string,
  index: number,
  {
    capacity,
    free,
    latencyMs = 20,
    shards,
  }: { capacity: number; free: number; latencyMs?: number; shards: number },
) {
  return direct.send(
    new PutItemCommand({
      TableName: tableName,
      Item: {
        pk: { S: `sem#${name}` },
        sk: { S: `adaptive#${index}` },
        capacity: { N: String(capacity) },
        free: { N: String(free) },
        holders: { M: {} },
        latencyMs: { N: String(latencyMs) },
        decreasedAt: { N: '0' },
        shards: { N: String(shards) },
      },
    }),
  );
}

const takesOf = (calls: readonly DynamoCall[]) =>
  calls.filter((c) => operationOf(c) === 'take').map((c) => c.input.Key?.sk?.S);
const fresh = () => `adaptive-rounds-${randomUUID().slice(0, 8)}`;

describe('AdaptiveDynamoSemaphore rounds', () => {
  it('defaults to one shard per 64 permits of the starting limit, capped by the hard cap', () => {
    const shardsOf = (limit: number, ratePerSecond: number) =>
      new AdaptiveDynamoSemaphore({
        client: direct,
        tableName,
        name: 'n',
        limit,
        adaptive: { ratePerSecond },
      }).shards;
    expect(shardsOf(3_500, 3_500)).toBe(2); // 70 permits
    expect(shardsOf(10, 3_500)).toBe(1); // capped at 10
    expect(shardsOf(5_000, 100_000)).toBe(32); // 2,000 permits
  });

  it('adopts the shard count stored by whoever created the items', async () => {
    const name = fresh();
    await (await semaphore(name, { shards: 3 }).sem.acquire(1)).release();
    const { sem } = semaphore(name, { shards: 1 });
    expect(sem.shards).toBe(1);
    const lease = await sem.acquire(4, { min: 1 });
    expect(sem.shards).toBe(3);
    expect((await storedAdaptiveShards(direct, tableName, name)).map((s) => s.sk).sort()).toEqual([
      'adaptive#0',
      'adaptive#1',
      'adaptive#2',
    ]);
    await lease.release();
  });

  it('a grant that fits one shard is one take, on the shard the random start picks', async () => {
    const name = fresh();
    await (await semaphore(name).sem.acquire(1)).release(); // creates both shards
    for (const [random, shard] of [
      [0, 'adaptive#0'],
      [0.99, 'adaptive#1'],
    ] as const) {
      const { sem, calls } = semaphore(name, { random: () => random });
      const lease = await sem.acquire(2);
      expect(takesOf(calls)).toEqual([shard]);
      await lease.release();
    }
  });

  it('a larger grant takes from the roomiest shard first, then the next, and skips a full one', async () => {
    const name = fresh();
    const holder = await semaphore(name, { random: () => 0 }).sem.acquire(1); // shard 0: 1 free, shard 1: 2
    const { sem, calls } = semaphore(name, { random: () => 0 });
    const lease = await sem.acquire(3);
    expect(lease.permits).toBe(3);
    expect(takesOf(calls)).toEqual(['adaptive#1', 'adaptive#0']);
    // Both full now: a round that finds too little writes nothing.
    const { sem: late, calls: lateCalls } = semaphore(name);
    await expect(late.acquire(1, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(takesOf(lateCalls)).toEqual([]);
    await Promise.all([lease.release(), holder.release()]);
  });

  it('takes only what is free up to k, even when min is less', async () => {
    const name = fresh();
    const holder = await semaphore(name, { random: () => 0 }).sem.acquire(3);
    const { sem } = semaphore(name);
    const lease = await sem.acquire(4, { min: 1 });
    expect(lease.permits).toBe(1);
    expect((await storedAdaptiveShards(direct, tableName, name)).map((s) => s.free)).toEqual([0, 0]);
    await Promise.all([lease.release(), holder.release()]);
  });
});

describe('AdaptiveDynamoSemaphore options and release writes', () => {
  it('refuses impossible options with a typed error before any request', () => {
    const make = (over: Partial<AdaptiveDynamoSemaphoreOptions>) => () =>
      new AdaptiveDynamoSemaphore({
        client: direct,
        tableName,
        name: 'n',
        limit: 10,
        adaptive: { ratePerSecond: 100 },
        ...over,
      });
    for (const bad of [{ name: '' }, { limit: 0 }, { limit: 2.5 }, { leaseMs: -1 }]) {
      expect(make(bad)).toThrow(InvalidSemaphoreOptionsError);
    }
  });

  it('a release is one write; one whose limit step lost its condition is two; a reclaimed lease gives back nothing more', async () => {
    const name = fresh();
    let clock = 30_000_000;
    const { sem, calls } = semaphore(name, { shards: 1, now: () => clock });
    const giveBacks = () => calls.filter((c) => operationOf(c) === 'give-back').length;

    const plain = await sem.acquire(1);
    plain.report?.({ succeeded: 5, throttled: 0 });
    await plain.release();
    expect(giveBacks()).toBe(1);

    // Two leases read the same capacity; the first release moves it, so the second's step is stale.
    const [a, b] = [await sem.acquire(1), await sem.acquire(1)];
    clock += 100;
    a.report?.({ succeeded: 7, throttled: 3, attemptMs: 500 }); // overloaded: a decrease
    b.report?.({ succeeded: 5, throttled: 0, attemptMs: 500 });
    await a.release();
    expect(giveBacks()).toBe(2);
    await b.release();
    expect(giveBacks()).toBe(4);
    expect(await storedAdaptiveShards(direct, tableName, name)).toMatchObject([{ held: 0 }]);

    // Reclaimed by another acquirer: its plain give-back finds no entry and is not repeated.
    const lost = await sem.acquire(2, { leaseMs: 10 });
    clock += 1_000;
    const taker = await semaphore(name, { now: () => clock }).sem.acquire(2);
    const before = giveBacks();
    await lost.release();
    expect(giveBacks() - before).toBe(1);
    await taker.release();
  });
});

describe('AdaptiveDynamoSemaphore after a shrink', () => {
  it("a shard whose holders exceed its shrunk capacity counts as no room, not as debt against the others' room", async () => {
    const name = fresh();
    const item = (index: number, capacity: number, free: number) =>
      putShard(name, index, { capacity, free, shards: 2 });
    await item(0, 1, -2); // shrunk to 1 while 3 are still held
    await item(1, 2, 2);
    const lease = await semaphore(name).sem.acquire(2, { deadline: Date.now() });
    expect(lease.permits).toBe(2);
    expect((await storedAdaptiveShards(direct, tableName, name)).map((s) => s.free)).toEqual([-2, 0]);
  });
});

describe('AdaptiveDynamoSemaphore takes, precisely', () => {
  /** Shards of `name` with the given free permits (capacity = the largest, so frees fit). */
  async function shardsWithFree(name: string, frees: readonly number[]) {
    for (const [index, free] of frees.entries()) {
      await putShard(name, index, { capacity: Math.max(...frees), free, shards: frees.length });
    }
  }

  it('the whole fit is the first shard from the random start with exactly enough, not the roomiest', async () => {
    const name = fresh();
    await shardsWithFree(name, [2, 4]);
    const { sem, calls } = semaphore(name, { random: () => 0 });
    await sem.acquire(2);
    expect(takesOf(calls)).toEqual(['adaptive#0']);
  });

  it('stops taking once it has k, and never takes from a shard with nothing free', async () => {
    const name = fresh();
    await shardsWithFree(name, [2, 2, 2]);
    const { sem, calls } = semaphore(name, { random: () => 0 });
    expect((await sem.acquire(3)).permits).toBe(3);
    expect(takesOf(calls)).toHaveLength(2);

    const other = fresh();
    await shardsWithFree(other, [0, 1, 2]);
    const { sem: partial, calls: partialCalls } = semaphore(other, { random: () => 0 });
    expect((await partial.acquire(4, { min: 1 })).permits).toBe(3);
    expect(takesOf(partialCalls)).toEqual(['adaptive#2', 'adaptive#1']);
  });

  it('an item stored without a shard count is not adopted as "no shards": the acquire waits, never granting nothing', async () => {
    const name = fresh();
    await direct.send(
      new PutItemCommand({
        TableName: tableName,
        Item: {
          pk: { S: `sem#${name}` },
          sk: { S: 'adaptive#0' },
          capacity: { N: '2' },
          free: { N: '2' },
          holders: { M: {} },
        },
      }),
    );
    const { sem } = semaphore(name, { shards: 1 });
    await expect(sem.acquire(1, { deadline: Date.now() + 50 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(sem.shards).toBe(1);
  });

  it('a round that finds less than min free writes nothing', async () => {
    const name = fresh();
    await shardsWithFree(name, [1, 0]);
    const { sem, calls } = semaphore(name);
    await expect(sem.acquire(2, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(takesOf(calls)).toEqual([]);
  });

  it('a take that fails with an error gives back exactly what it attempted', async () => {
    const name = fresh();
    const { client, calls } = faultInjecting(direct, {
      before: (call) => {
        if (operationOf(call) === 'take')
          throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
      },
    });
    const sem = new AdaptiveDynamoSemaphore({
      client,
      tableName,
      name,
      limit: 40,
      adaptive: { ratePerSecond: 200, initialLatencyMs: 20 },
    });
    await expect(sem.acquire(2)).rejects.toMatchObject({ name: 'ThrottlingException' });
    expect(calls.filter((c) => operationOf(c) === 'give-back').map((c) => c.input.Key?.sk?.S)).toEqual([
      'adaptive#0',
    ]);
  });
});

describe('AdaptiveDynamoSemaphore leases', () => {
  it('extend checks its length, and while a release is in flight is LeaseLostError without a request', async () => {
    const { sem, calls } = semaphore(fresh());
    const lease = await sem.acquire(1);
    await expect(lease.extend(-5)).rejects.toMatchObject({ name: 'InvalidPermitRequestError' });
    const releasing = lease.release();
    await expect(lease.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
    await releasing;
    expect(calls.filter((c) => operationOf(c) === 'extend')).toEqual([]);
  });

  it('an overloaded release stamps the decrease with its release time', async () => {
    let clock = 40_000_000;
    const name = fresh();
    const { sem } = semaphore(name, { shards: 1, now: () => clock });
    const lease = await sem.acquire(2);
    clock += 100;
    lease.report?.({ succeeded: 7, throttled: 3 });
    await lease.release();
    expect(await storedAdaptiveShards(direct, tableName, name)).toMatchObject([{ decreasedAt: clock }]);
  });
});

describe('AdaptiveDynamoSemaphore: holders say when they will be done (`requests`)', () => {
  const surveys = (calls: readonly DynamoCall[]) => calls.filter((c) => operationOf(c) === 'survey').length;

  it("a holder's entry says when it expects to give back: requests x slot time / permits", async () => {
    const name = fresh();
    const clock = 40_000_000;
    // 200/s x 20 ms = 4 permits over 2 shards; one shard's 2 permits stand for 100 requests/s.
    const { sem } = semaphore(name, { now: () => clock, random: () => 0 });
    const lease = await sem.acquire(2, { requests: 50, leaseMs: 60_000 });
    const [raw] = (await semaphoreItems(direct, tableName, name)).filter(
      (i) => Object.keys(i.holders?.M ?? {}).length > 0,
    );
    const entry = Object.values(raw!.holders!.M!)[0]!.M!;
    expect(Number(entry.due!.N)).toBe(clock + 500);
    expect(Number(entry.until!.N)).toBe(clock + 60_000);
    await lease.release();
  });

  it("a grant over two shards is due at its permits' weighted slot time, with the in-flight slack", async () => {
    const name = fresh();
    for (const [index, latencyMs] of [20, 60].entries()) {
      await putShard(name, index, { capacity: 2, free: 2, latencyMs, shards: 2 });
    }
    const clock = 60_000_000;
    const { sem } = semaphore(name, {
      now: () => clock,
      random: () => 0,
      adaptive: { ratePerSecond: 200, initialLatencyMs: 20, inFlightSlack: 1.5 },
    });
    // 3 of the 4 free: 2 on shard 0 (20 ms), 1 on shard 1 (60 ms): (2 x 20 + 60) / 3 ms per permit, x 1.5.
    const lease = await sem.acquire(3, { requests: 30 });
    expect(lease.permits).toBe(3);
    const dues = (await semaphoreItems(direct, tableName, name)).flatMap((i) =>
      Object.values(i.holders?.M ?? {}).map((h) => Number(h.M?.due?.N)),
    );
    expect(dues).toEqual([clock + 500, clock + 500]);
    await lease.release();
  });

  it('a waiter whose deadline comes before the holders are due gives up after one read, not at its deadline', async () => {
    const name = fresh();
    const holder = await semaphore(name).sem.acquire(4, { requests: 4_000 }); // due in ~20 s
    const { sem, calls } = semaphore(name);
    const started = Date.now();
    const error = await sem.acquire(1, { deadline: started + 5_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'SemaphoreTimeoutError' });
    // It says when the holder is due: 4,000 requests at 200/s (4 permits x 20 ms), from the holder's take.
    const freeAt = (error as { freeAt?: number }).freeAt ?? 0;
    expect(freeAt - started).toBeGreaterThan(19_000);
    expect(freeAt - started).toBeLessThanOrEqual(20_000);
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(surveys(calls)).toBe(1);
    expect(takesOf(calls)).toEqual([]);
    await holder.release();
  });

  it('a holder due after its lease ends is free when its lease ends: the waiter does not give up on its due', async () => {
    const name = fresh();
    // Due in ~20 s (4,000 requests at 200/s), but its lease ends in 300 ms: it cannot hold past that.
    const holder = await semaphore(name).sem.acquire(4, { requests: 4_000, leaseMs: 300 });
    const { sem } = semaphore(name);
    const started = Date.now();
    const lease = await sem.acquire(1, { deadline: started + 3_000 });
    expect(lease.permits).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await lease.release();
    await holder.release().catch(() => undefined); // reclaimed: its release finds nothing
  });

  it('a waiter sleeps until the holder is due instead of polling, and gets the permits it gives back', async () => {
    const name = fresh();
    const clock = 50_000_000;
    const timed = { now: () => clock, random: () => 0 };
    const holder = await semaphore(name, timed).sem.acquire(4, { requests: 120 }); // 4 permits: 200/s, due in 600 ms
    const { sem, calls } = semaphore(name, timed);
    // Only the timers are fake: the DynamoDB round trips stay real, the waiter's sleeps wait for the test.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const sleeps = vi.spyOn(globalThis, 'setTimeout');
      const waiting = sem.acquire(2, { deadline: clock + 5_000 });
      // One survey finds the holder due at +600 ms: the waiter arms one sleep of exactly that (random 0).
      // (The SDK arms its own 3 s socket-usage check per request; it never fires here.)
      const waits = () => sleeps.mock.calls.map(([, ms]) => ms).filter((ms) => ms !== 3_000);
      // (Not vi.waitFor: it advances fake timers as it polls; setImmediate is left real.)
      const giveUpAt = performance.now() + 10_000;
      while (waits().length === 0 && performance.now() < giveUpAt) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(waits()).toEqual([600]);
      expect(surveys(calls)).toBe(1);
      await holder.release();
      // Nothing reads before the due time; at it, the waiter takes the permits the holder gave back.
      await vi.advanceTimersByTimeAsync(599);
      expect(surveys(calls)).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      const lease = await waiting;
      expect(lease.permits).toBe(2);
      expect(surveys(calls)).toBe(2);
      await lease.release();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a holder that announced nothing is polled for: the waiter keeps its deadline', async () => {
    const name = fresh();
    const holder = await semaphore(name).sem.acquire(4);
    const { sem, calls } = semaphore(name);
    const started = Date.now();
    // 600 ms: polling at 5..20 ms reads more than 3 times even with round trips of 150 ms on a loaded machine;
    // a waiter that slept instead would read once or twice.
    await expect(sem.acquire(1, { deadline: started + 600 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    expect(surveys(calls)).toBeGreaterThan(3);
    await holder.release();
  });

  it('a late holder (past its due) is polled for until the deadline, as is one beside an unannounced one', async () => {
    const name = fresh();
    let offset = 0;
    const now = () => Date.now() + offset;
    const late = await semaphore(name, { now, random: () => 0 }).sem.acquire(2, { requests: 2 }); // due in 20 ms
    const silent = await semaphore(name, { now, random: () => 0.99 }).sem.acquire(2);
    offset += 1_000; // the announced holder is late now
    for (const k of [2, 3]) {
      const { sem, calls } = semaphore(name, { now });
      const started = now();
      await expect(sem.acquire(k, { deadline: started + 600 })).rejects.toMatchObject({
        name: 'SemaphoreTimeoutError',
      });
      expect(now() - started).toBeGreaterThanOrEqual(590);
      expect(surveys(calls)).toBeGreaterThan(3);
    }
    await Promise.all([late.release(), silent.release()]);
  });

  it("a waiter that needs an unannounced holder's permits too polls until its deadline, whatever the other is due", async () => {
    const name = fresh();
    const announced = await semaphore(name, { random: () => 0 }).sem.acquire(2, { requests: 4_000 }); // due in 40 s
    const silent = await semaphore(name, { random: () => 0.99 }).sem.acquire(2);
    const { sem, calls } = semaphore(name);
    const started = Date.now();
    await expect(sem.acquire(3, { deadline: started + 600 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    expect(surveys(calls)).toBeGreaterThan(3);
    // Needing only what the announced one holds, a waiter gives up at once.
    const { sem: one, calls: oneCalls } = semaphore(name);
    await expect(one.acquire(1, { deadline: Date.now() + 5_000 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(surveys(oneCalls)).toBe(1);
    await Promise.all([announced.release(), silent.release()]);
  });

  it("a waiter that lost the reclaim of an expired holder to another one does not give up on a later holder's due", async () => {
    const name = fresh();
    const clock = 42_000_000;
    const now = () => clock;
    const expiring = await semaphore(name, { now, shards: 1 }).sem.acquire(2, { requests: 2, leaseMs: 500 });
    const busy = await semaphore(name, { now, shards: 1 }).sem.acquire(2, { requests: 4_000 }); // due in 40 s
    const later = () => clock + 1_000; // the first holder's lease has ended by then
    const racer = semaphore(name, { now: later }).sem;
    let raced = false;
    const { sem: waiter } = semaphore(
      name,
      { now: later },
      {
        // Another waiter reclaims the expired holder between this waiter's survey and its own reclaim.
        async before(call) {
          if (operationOf(call) !== 'reclaim' || raced) return;
          raced = true;
          expect(await racer.table.reclaim(0, [[expiring.fence, { n: 2, until: clock + 500 }]])).toBe(2);
        },
      },
    );
    // Two permits are free (the expired holder's): the waiter must not give up at once on the busy
    // holder's due, 40 s away, as if nothing were free before it.
    const lease = await waiter.acquire(1, { deadline: later() + 1_000 });
    expect(raced).toBe(true);
    expect(lease.permits).toBe(1);
    await Promise.all([lease.release(), busy.release()]);
  });

  it('a holder announces its due no later than its lease ends, however many requests it says (DynamoDB takes the number)', async () => {
    const name = fresh();
    const clock = 41_000_000;
    const { sem } = semaphore(name, { now: () => clock, random: () => 0 });
    const lease = await sem.acquire(2, { requests: 1e130, leaseMs: 60_000 });
    const [raw] = (await semaphoreItems(direct, tableName, name)).filter(
      (i) => Object.keys(i.holders?.M ?? {}).length > 0,
    );
    const entry = Object.values(raw!.holders!.M!)[0]!.M!;
    expect(Number(entry.due!.N)).toBe(clock + 60_000);
    await lease.release();
  });

  it('refuses a negative or non-finite `requests`', async () => {
    const { sem } = semaphore(fresh());
    for (const requests of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(sem.acquire(1, { requests })).rejects.toMatchObject({ name: 'InvalidPermitRequestError' });
    }
  });
});
