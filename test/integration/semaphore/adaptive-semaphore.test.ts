// The adaptive semaphore's state in its shard items (dynalite): the limit moves on releases, a shrink
// never over-grants while holders hold more than the new limit, and the state survives a restart of the
// whole fleet (new processes, new clients, nothing in memory).
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { MIN_CAPACITY } from '../../../lib/semaphore/adaptive-limit.js';
import {
  AdaptiveDynamoSemaphore,
  type AdaptiveDynamoSemaphoreOptions,
  type Lease,
  SemaphoreTimeoutError,
} from '../../../lib/semaphore/index.js';
import { localClientConfig } from '../../support/local-aws.js';
import { semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const stored = (name: string, on: DynamoDBClient = client) => storedAdaptiveShards(on, tableName, name);

// 100/s x 20 ms = 2 permits to start with, hard cap 10, one shard.
const semaphore = (name: string, over: Partial<AdaptiveDynamoSemaphoreOptions> = {}) =>
  new AdaptiveDynamoSemaphore({
    client,
    tableName,
    name,
    limit: 10,
    adaptive: { ratePerSecond: 100, initialLatencyMs: 20, latencyWeight: 1 },
    backoffBaseMs: 5,
    backoffCapMs: 20,
    ...over,
  });

// Deadlines are on the semaphore's clock (`sem.now`, virtual in some tests): `now` means "try once".
const refused = (sem: AdaptiveDynamoSemaphore, k = 1) =>
  expect(sem.acquire(k, { deadline: sem.now() })).rejects.toBeInstanceOf(SemaphoreTimeoutError);

/** Acquires single permits until one is refused at once; resolves the leases. */
async function takeAll(sem: AdaptiveDynamoSemaphore): Promise<Lease[]> {
  const leases: Lease[] = [];
  for (;;) {
    const lease = await sem.acquire(1, { deadline: sem.now() }).catch((e: unknown) => {
      if (e instanceof SemaphoreTimeoutError) return undefined;
      throw e;
    });
    if (lease === undefined) return leases;
    leases.push(lease);
  }
}

describe('AdaptiveDynamoSemaphore (dynalite)', () => {
  it("starts at Little's law with the assumed latency and grants no more", async () => {
    const name = `start-${randomUUID().slice(0, 8)}`;
    const sem = semaphore(name);
    const lease = await sem.acquire(5, { min: 1 });
    expect(lease.permits).toBe(2);
    // The latency the grant stands for: 2 permits at 20 ms are 100 attempts/s.
    expect(lease.latencyMs).toBe(20);
    await refused(sem);
    await lease.release();
    expect(await stored(name)).toMatchObject([{ sk: 'adaptive#0', capacity: 2, free: 2, held: 0 }]);
  });

  it('with in-flight slack: slack x the permits, standing for the same rate (the lease says so)', async () => {
    const name = `slack-${randomUUID().slice(0, 8)}`;
    const sem = semaphore(name, {
      adaptive: { ratePerSecond: 100, initialLatencyMs: 20, latencyWeight: 1, inFlightSlack: 1.5 },
    });
    const lease = await sem.acquire(5, { min: 1 });
    expect(lease.permits).toBe(3);
    // 3 permits at 30 ms of slot each: still 100 attempts/s (20 ms of latency x 1.5).
    expect(lease.latencyMs).toBe(30);
    await lease.release();
  });

  it('grants a share of one permit when rate x latency is under one, whole, to one holder at a time', async () => {
    const name = `fraction-${randomUUID().slice(0, 8)}`;
    let now = 500_000;
    // 50/s x 15 ms = 0.75 of a permit: a whole permit would send 66/s.
    const sem = semaphore(name, {
      now: () => now,
      adaptive: { ratePerSecond: 50, initialLatencyMs: 15, latencyWeight: 1 },
    });
    const first = await sem.acquire(8, { min: 1 });
    expect(first.permits).toBe(0.75);
    await refused(sem);
    // The holder saw 15 ms per attempt (0.75 permits x 300 ms / 15 attempts): the limit stays 0.75.
    now += 300;
    first.report?.({ succeeded: 15, throttled: 0 });
    await first.release();
    expect(await stored(name)).toMatchObject([{ capacity: 0.75, free: 0.75, held: 0 }]);
    const second = await sem.acquire(8, { min: 1 });
    expect(second.permits).toBe(0.75);
    // A SlowDown shrinks it below that, still a share of one slot.
    now += 300;
    // Measured at the shard's 15 ms per attempt: the latency holds, only the SlowDowns move the limit.
    second.report?.({ succeeded: 10, throttled: 2, attemptMs: 12 * 15 });
    await second.release();
    const [shrunk] = await stored(name);
    expect(shrunk!.capacity).toBeCloseTo(0.525, 2);
    expect(shrunk!.free).toBe(shrunk!.capacity);
    expect((await sem.acquire(8, { min: 1 })).permits).toBe(shrunk!.capacity);
  });

  it('concurrent releases never compound one shrink: the limit stays >= MIN_CAPACITY (fleet simulation finding)', async () => {
    const name = `compound-${randomUUID().slice(0, 8)}`;
    // 3500/s x 20 ms = 70 permits over 2 shards; twenty holders each see one instant success (a latency
    // near 0, so a ceiling near MIN_CAPACITY) and release together: each step shrinks from what it saw.
    const make = () =>
      semaphore(name, { limit: 3500, adaptive: { ratePerSecond: 3500, initialLatencyMs: 20 } });
    const leases = await Promise.all(Array.from({ length: 20 }, () => make().acquire(1, { min: 1 })));
    for (const lease of leases) lease.report?.({ succeeded: 1, throttled: 0, attemptMs: 0.2 });
    await Promise.all(leases.map((lease) => lease.release()));
    const shards = await stored(name);
    expect(shards.length).toBeGreaterThan(0);
    for (const shard of shards) {
      expect(shard.held).toBe(0);
      expect(shard.capacity).toBeGreaterThanOrEqual(MIN_CAPACITY);
      expect(shard.free).toBeCloseTo(shard.capacity, 9);
    }
    // And the prefix can still be had.
    const after = await make().acquire(1, { min: 1, deadline: Date.now() + 2_000 });
    expect(after.permits).toBeGreaterThan(0);
    await after.release();
  });

  it('moves the limit in the release write: measured latency and starved holders grow it', async () => {
    const name = `grow-${randomUUID().slice(0, 8)}`;
    let now = 1_000_000;
    const sem = semaphore(name, { now: () => now });
    const lease = await sem.acquire(8, { min: 1 });
    expect(lease.permits).toBe(2);
    // 2 permits for 200 ms, 5 attempts: 80 permit-ms each -> ceiling 100/s x 80 ms = 8. The permits follow
    // the latency (x4, at most x2 per release: 4), and wanted 8, got 2: + min(1, 4 / 8) = half a permit.
    now += 200;
    lease.report?.({ succeeded: 5, throttled: 0 });
    await lease.release();
    expect(await stored(name)).toMatchObject([{ capacity: 4.5, free: 4.5, latencyMs: 80, held: 0 }]);
    expect((await sem.acquire(8, { min: 1 })).permits).toBe(4.5);
  });

  it('a shrink while leases are held grants nothing until the holders are back under the new limit', async () => {
    const name = `shrink-${randomUUID().slice(0, 8)}`;
    let now = 2_000_000;
    const sem = semaphore(name, {
      now: () => now,
      adaptive: { ratePerSecond: 500, initialLatencyMs: 20, latencyWeight: 1 },
    });
    // 500/s x 20 ms = 10 permits, all held by 10 single-permit leases.
    const leases = await takeAll(sem);
    expect(leases).toHaveLength(10);
    // One holder saw SlowDowns: the limit becomes 10 x 0.7 = 7 with 9 still held.
    now += 20;
    const throttled = leases.pop()!;
    throttled.report?.({ succeeded: 8, throttled: 2, attemptMs: 200 });
    await throttled.release();
    const [afterCut] = await stored(name);
    expect(afterCut).toMatchObject({ held: 9 });
    expect(afterCut!.capacity).toBeCloseTo(7, 9);
    expect(afterCut!.free).toBeCloseTo(-2, 9);
    await refused(sem);
    // Give back one at a time: a new grant only once held < 7, and held never exceeds max(held, 7).
    let granted = 0;
    while (leases.length > 0) {
      await leases.pop()!.release();
      const more = await takeAll(sem);
      granted += more.length;
      const [shard] = await stored(name);
      expect(shard!.held).toBeLessThanOrEqual(Math.max(leases.length, 7));
      if (more.length > 0) expect(shard!.held).toBeLessThanOrEqual(7);
      for (const lease of more) await lease.release();
    }
    expect(granted).toBeGreaterThan(0);
    expect((await stored(name))[0]).toMatchObject({ held: 0 });
  });

  it('one decrease per round: holders taken before a decrease do not cut again, and still give back', async () => {
    const name = `round-${randomUUID().slice(0, 8)}`;
    let now = 3_000_000;
    const sem = semaphore(name, {
      now: () => now,
      adaptive: { ratePerSecond: 500, initialLatencyMs: 20, latencyWeight: 1 },
    });
    const [a, b] = [await sem.acquire(2), await sem.acquire(2)];
    now += 20;
    a.report?.({ succeeded: 8, throttled: 2, attemptMs: 200 });
    b.report?.({ succeeded: 8, throttled: 2, attemptMs: 200 });
    await a.release();
    await b.release();
    const [shard] = await stored(name);
    expect(shard!.capacity).toBeCloseTo(7, 9);
    expect(shard!.held).toBe(0);
    expect(shard!.free).toBeCloseTo(7, 9);
  });

  it('survives a restart of the whole fleet: new processes read the limit the old ones left', async () => {
    const name = `restart-${randomUUID().slice(0, 8)}`;
    let now = 4_000_000;
    const before = semaphore(name, { now: () => now });
    for (let i = 0; i < 3; i++) {
      const lease = await before.acquire(8, { min: 1 });
      now += 200;
      // 40 ms per attempt: the permits double to 4 (100/s x 40 ms, the ceiling) and stay there.
      lease.report?.({ succeeded: 5, throttled: 0, attemptMs: 5 * 40 });
      await lease.release();
    }
    // A holder that never came back (its process died with the fleet).
    const orphan = await before.acquire(1, { leaseMs: 1_000 });
    expect(orphan.permits).toBe(1);
    // The fleet restarts: a new client, a new semaphore instance, nothing carried over in memory.
    const freshClient = new DynamoDBClient(localClientConfig('dynamodb'));
    try {
      now += 5_000; // the orphan's lease has expired
      const after = new AdaptiveDynamoSemaphore({
        client: freshClient,
        tableName,
        name,
        limit: 10,
        adaptive: { ratePerSecond: 100, initialLatencyMs: 20 },
        now: () => now,
      });
      const lease = await after.acquire(10, { min: 1 });
      // 4 permits (not the initial 2), the orphan's permit reclaimed.
      expect(lease.permits).toBe(4);
      await lease.release();
      expect(await stored(name, freshClient)).toMatchObject([{ capacity: 4, held: 0 }]);
    } finally {
      freshClient.destroy();
    }
  });

  it('a lease released without a report leaves the limit alone; a reclaimed lease frees nothing twice', async () => {
    const name = `plain-${randomUUID().slice(0, 8)}`;
    let now = 5_000_000;
    const sem = semaphore(name, { now: () => now });
    const lease = await sem.acquire(2, { leaseMs: 100 });
    now += 1_000;
    // Expired: another acquirer reclaims it.
    const taker = await sem.acquire(2);
    await lease.release();
    expect(await stored(name)).toMatchObject([{ capacity: 2, free: 0, held: 2 }]);
    await taker.release();
    expect(await stored(name)).toMatchObject([{ capacity: 2, free: 2, held: 0 }]);
  });
});
