// A lease's resize (dynalite): a holder whose writes take longer than the latency its grant was sized with
// moves the fleet's latency and limit now, mid-lease, and grows by its share; never over-grants, once per
// lease, and its release gives back what the shard holds even when the resize's answer was lost.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptiveDynamoSemaphore,
  type AdaptiveDynamoSemaphoreOptions,
  SemaphoreTimeoutError,
} from '../../../lib/semaphore/index.js';
import { semaphoreItems, semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';
import { faultInjecting, operationOf } from './support/fault-injecting-client.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const stored = (name: string) => storedAdaptiveShards(client, tableName, name);

// 50/s at an assumed 50 ms with 1.5 slack: 3.75 permits to start with (the handler's first lease), cap 50.
const semaphore = (name: string, over: Partial<AdaptiveDynamoSemaphoreOptions> = {}) =>
  new AdaptiveDynamoSemaphore({
    client,
    tableName,
    name,
    limit: 50,
    adaptive: { ratePerSecond: 50, initialLatencyMs: 50, inFlightSlack: 1.5 },
    backoffBaseMs: 5,
    backoffCapMs: 20,
    ...over,
  });

const fresh = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

describe('AdaptiveLease.resize (dynalite)', () => {
  it('writes slower than the grant assumed: the latency and the limit move now, and the lease grows by its share', async () => {
    const name = fresh('grow');
    const sem = semaphore(name);
    const lease = await sem.acquire(20, { min: 1 });
    expect(lease.permits).toBe(3.75);
    expect(lease.latencyMs).toBe(75);
    // 10 writes of 80 ms of slot each: above the 50 assumed; the latency moves to 80 (not averaged).
    const permits = await lease.resize!({ succeeded: 20, throttled: 0, attemptMs: 800, writes: 10 });
    expect(permits).toBe(6);
    expect(lease.permits).toBe(6);
    // The same rate: 6 permits at 80 ms x 1.5 are 50 writes/s, as 3.75 at 50 ms x 1.5 were.
    expect(lease.latencyMs).toBe(120);
    expect(await stored(name)).toMatchObject([{ capacity: 6, free: 0, held: 6, latencyMs: 80 }]);
    await lease.release();
    expect(await stored(name)).toMatchObject([{ capacity: 6, free: 6, held: 0 }]);
  });

  it('at most x4 per resize, and once per lease', async () => {
    const name = fresh('twice');
    const sem = semaphore(name);
    const lease = await sem.acquire(20, { min: 1 });
    // 300 ms per write against 50: x4 at most, 200 ms, and 3.75 x 4 = 15 permits.
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 3_000, writes: 10 })).toBe(15);
    expect(lease.latencyMs).toBe(300);
    // Still slower than the grant assumes, but a lease resizes once: no second write.
    expect(await lease.resize!({ succeeded: 30, throttled: 0, attemptMs: 18_000, writes: 30 })).toBe(15);
    expect(await stored(name)).toMatchObject([{ capacity: 15, free: 0, latencyMs: 200 }]);
    await lease.release();
  });

  it('writes as quick as assumed or quicker, or nothing counted: no write, the same permits', async () => {
    const name = fresh('quick');
    const sem = semaphore(name);
    const lease = await sem.acquire(20, { min: 1 });
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 500, writes: 10 })).toBe(3.75);
    expect(await lease.resize!({ succeeded: 0, throttled: 0, attemptMs: 0, writes: 0 })).toBe(3.75);
    expect(await lease.resize!({ succeeded: 10, throttled: 0 })).toBe(3.75);
    // None of those was a resize: a slow sample still may.
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 800, writes: 10 })).toBe(6);
    await lease.release();
  });

  it('beside another holder: no resize (it paces at the latency it was granted with), nothing freed for a third', async () => {
    const name = fresh('share');
    const sem = semaphore(name, { adaptive: { ratePerSecond: 100, initialLatencyMs: 40 } });
    // 4 permits at 40 ms (100/s): b holds 2, a the other 2 (it asked for up to 10).
    const b = await sem.acquire(2);
    const a = await sem.acquire(10, { min: 1 });
    expect(a.permits).toBe(2);
    // Rescaled to 60 ms the shard would hold 6 permits: a 3, a new holder 1 (both at 60 ms: 66/s), and b
    // still sending 2 / 40 ms = 50/s: 116/s against 100. The resize is dropped instead.
    expect(await a.resize!({ succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 })).toBe(2);
    expect(a.latencyMs).toBe(40);
    expect(await stored(name)).toMatchObject([{ capacity: 4, free: 0, held: 4, latencyMs: 40 }]);
    await expect(sem.acquire(1, { deadline: sem.now() })).rejects.toBeInstanceOf(SemaphoreTimeoutError);
    await Promise.all([a.release(), b.release()]);
    expect(await stored(name)).toMatchObject([{ capacity: 4, free: 4, held: 0 }]);
    // Alone, the next lease of the same prefix resizes.
    const alone = await sem.acquire(10, { min: 1 });
    expect(await alone.resize!({ succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 })).toBe(6);
    await alone.release();
  });

  it('never more than the lease asked for', async () => {
    const name = fresh('asked');
    const sem = semaphore(name);
    const lease = await sem.acquire(4, { min: 1 });
    expect(lease.permits).toBe(3.75);
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 1_000, writes: 10 })).toBe(4);
    // The limit rescaled all the same: 3.5 free for others.
    expect(await stored(name)).toMatchObject([{ capacity: 7.5, free: 3.5, held: 4 }]);
    await lease.release();
  });

  it('a limit another holder moved since the take: the resize is dropped, the lease keeps its permits', async () => {
    const name = fresh('moved');
    const sem = semaphore(name, { adaptive: { ratePerSecond: 100, initialLatencyMs: 40 } });
    const b = await sem.acquire(2);
    // a would grow to 3 on a capacity rescaled from 4 to 6 (it asked for up to 10).
    const a = await sem.acquire(10, { min: 1 });
    expect(a.permits).toBe(2);
    b.report!({ succeeded: 10, throttled: 0, attemptMs: 500, writes: 10 });
    await b.release();
    const moved = (await stored(name))[0]!.capacity;
    expect(moved).not.toBe(4);
    expect(await a.resize!({ succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 })).toBe(2);
    expect(a.permits).toBe(2);
    await a.release();
    expect(await stored(name)).toMatchObject([{ capacity: moved, free: moved, held: 0 }]);
  });

  it('announces when it will be done at its new rate (waiters sleep until then)', async () => {
    const name = fresh('due');
    let clock = 1_000_000;
    const sem = semaphore(name, { now: () => clock });
    const lease = await sem.acquire(20, { min: 1, requests: 30 });
    // 30 writes at 3.75 permits x 75 ms: 600 ms.
    const dueOf = async () =>
      Number((await semaphoreItems(client, tableName, name))[0]!.holders!.M![lease.fence]!.M!.due!.N);
    expect(await dueOf()).toBe(clock + 600);
    clock += 400;
    // 10 done; 20 left at 6 permits x 120 ms: 400 ms from now.
    await lease.resize!({ succeeded: 20, throttled: 0, attemptMs: 800, writes: 10 });
    expect(await dueOf()).toBe(clock + 400);
    await lease.release();
  });

  it('never past the hard limit: the capacity stops at limit / shards, and so does the lease', async () => {
    const name = fresh('hard-limit');
    const sem = semaphore(name, { limit: 5 });
    const lease = await sem.acquire(5, { min: 1 });
    // 7.5 by the rescale, 5 by the hard limit.
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 1_400, writes: 10 })).toBe(5);
    expect(await stored(name)).toMatchObject([{ capacity: 5, free: 0, held: 5 }]);
    await lease.release();
  });

  it('a lease over two shards grows by its share on each, never past what it asked for in all', async () => {
    const name = fresh('two-shards');
    let clock = 3_000_000;
    // 100/s at 40 ms: 4 permits, 2 per shard.
    const sem = semaphore(name, {
      shards: 2,
      now: () => clock,
      adaptive: { ratePerSecond: 100, initialLatencyMs: 40 },
    });
    const lease = await sem.acquire(5, { min: 1, requests: 25 });
    expect(lease.permits).toBe(4);
    clock += 100;
    // Each shard's share is 2 -> 3, but the lease asked for 5: one more permit in all.
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 })).toBe(5);
    const shards = await stored(name);
    expect(shards.map((s) => s.capacity)).toEqual([3, 3]);
    expect(shards.reduce((sum, s) => sum + s.held, 0)).toBe(5);
    // 15 left at 5 permits x 60 ms (no slack): 180 ms, announced on both shards.
    const dues = (await semaphoreItems(client, tableName, name)).map((i) =>
      Number(i.holders!.M![lease.fence]!.M!.due!.N),
    );
    expect(dues).toEqual([clock + 180, clock + 180]);
    await lease.release();
  });

  it('over two shards, the hard limit caps each shard at its part of it', async () => {
    const name = fresh('two-shards-limit');
    const sem = semaphore(name, {
      shards: 2,
      limit: 5,
      adaptive: { ratePerSecond: 100, initialLatencyMs: 40 },
    });
    const lease = await sem.acquire(5, { min: 1 });
    expect(lease.permits).toBe(4);
    // 2 -> 3 per shard by the rescale, 2.5 by the hard limit (5 over 2 shards).
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 })).toBe(5);
    expect((await stored(name)).map((s) => s.capacity)).toEqual([2.5, 2.5]);
    await lease.release();
  });

  it('grown less than its share (it asked for less): announces its due at the rate it now has', async () => {
    const name = fresh('due-capped');
    let clock = 2_000_000;
    const sem = semaphore(name, { now: () => clock });
    const lease = await sem.acquire(4, { min: 1, requests: 30 });
    const dueOf = async () =>
      Number((await semaphoreItems(client, tableName, name))[0]!.holders!.M![lease.fence]!.M!.due!.N);
    clock += 400;
    // 10 done; 4 permits (not 6) at 80 x 1.5 ms: 20 left take 600 ms, not the 400 of its whole share.
    expect(await lease.resize!({ succeeded: 20, throttled: 0, attemptMs: 800, writes: 10 })).toBe(4);
    expect(await dueOf()).toBe(clock + 600);
    await lease.release();
  });

  it('no resize for a released lease, for a lease that only read, or from attempts when writes are not counted', async () => {
    const name = fresh('nothing');
    const { client: counted, calls } = faultInjecting(client);
    const sem = semaphore(name, { client: counted });
    const released = await sem.acquire(20, { min: 1 });
    await released.release();
    const sent = calls.length;
    expect(await released.resize!({ succeeded: 10, throttled: 0, attemptMs: 1_000, writes: 10 })).toBe(3.75);
    // Not even a write that would fail: a released lease has nothing to resize.
    expect(calls).toHaveLength(sent);
    const reader = await sem.acquire(20, { min: 1 });
    // Reads only: no write to size by, however slow.
    expect(await reader.resize!({ succeeded: 10, throttled: 0, attemptMs: 1_000, writes: 0 })).toBe(3.75);
    expect(await stored(name)).toMatchObject([{ capacity: 3.75, latencyMs: 50 }]);
    // No write count: every attempt (succeeded and refused) is one: 600 ms over 10 attempts is 60 ms.
    expect(await reader.resize!({ succeeded: 8, throttled: 2, attemptMs: 600 })).toBe(4.5);
    expect(await stored(name)).toMatchObject([{ capacity: 4.5, latencyMs: 60 }]);
    await reader.release();
  });

  it('a resize whose answer is lost after it landed: the release still gives back all the shard holds', async () => {
    const name = fresh('lost');
    const { client: lossy } = faultInjecting(client, {
      after: (call) => {
        if (operationOf(call) === 'resize') throw new Error('answer lost');
      },
    });
    const sem = semaphore(name, { client: lossy });
    const lease = await sem.acquire(20, { min: 1 });
    await expect(
      lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 800, writes: 10 }),
    ).rejects.toMatchObject({
      name: 'Error',
      message: 'answer lost',
    });
    // It landed: the entry holds 6, the lease knows only its 3.75 for sure.
    expect(await stored(name)).toMatchObject([{ capacity: 6, held: 6 }]);
    expect(lease.permits).toBe(3.75);
    await lease.release();
    expect(await stored(name)).toMatchObject([{ capacity: 6, free: 6, held: 0 }]);
  });

  it('a resize that failed before it landed: the release gives back the permits taken', async () => {
    const name = fresh('unsent');
    const { client: failingResize } = faultInjecting(client, {
      before: (call) => {
        if (operationOf(call) === 'resize') throw new Error('DynamoDB unreachable');
      },
    });
    const sem = semaphore(name, { client: failingResize });
    const lease = await sem.acquire(20, { min: 1 });
    await expect(
      lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 800, writes: 10 }),
    ).rejects.toMatchObject({
      name: 'Error',
      message: 'DynamoDB unreachable',
    });
    await lease.release();
    expect(await stored(name)).toMatchObject([{ capacity: 3.75, free: 3.75, held: 0 }]);
  });
});
