// DynamoSemaphore races on DynamoDB Local (AWS's own emulator). The single-acquirer contract (grants,
// partial grants, release, reclaim of expired holders, fencing, limit change) runs here too: this run
// includes test/integration/semaphore/dynamo-semaphore.test.ts, pointed at DynamoDB Local
// (see vitest.backends.config.mts).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoSemaphore, type Lease, SemaphoreTimeoutError } from '../../lib/semaphore/index.js';
import { semaphoreTable, storedShards, totalUsed } from '../integration/semaphore/support/dynamo.js';
import { backendEndpoints } from './support/backends.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

/** `count` independent semaphore instances (as in separate Lambda containers) on one semaphore name. */
function contenders(count: number, options: { limit: number; shards?: number }) {
  const name = `race-${randomUUID().slice(0, 8)}`;
  return {
    name,
    instances: Array.from(
      { length: count },
      () => new DynamoSemaphore({ client, tableName, name, backoffBaseMs: 5, backoffCapMs: 50, ...options }),
    ),
  };
}

const settledLeases = (outcomes: PromiseSettledResult<Lease>[]) => ({
  leases: outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : [])),
  errors: outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : [])),
});

describe('DynamoSemaphore on DynamoDB Local: races', () => {
  it('talks to DynamoDB Local, not to an embedded emulator', async () => {
    const endpoint = await client.config.endpoint?.();
    expect(`${endpoint?.protocol}//${endpoint?.hostname}:${endpoint?.port}`).toBe(
      backendEndpoints().dynamodbLocal.endpoint,
    );
  });

  it('20 acquirers race for 3 permits: exactly 3 granted, 17 time out holding nothing', async () => {
    const { name, instances } = contenders(20, { limit: 3 });
    const deadline = Date.now() + 3_000;
    const { leases, errors } = settledLeases(
      await Promise.allSettled(instances.map((sem) => sem.acquire(1, { deadline }))),
    );
    expect(leases).toHaveLength(3);
    expect(errors).toHaveLength(17);
    for (const err of errors) expect(err).toBeInstanceOf(SemaphoreTimeoutError);

    const shards = await storedShards(client, tableName, name);
    expect(totalUsed(shards)).toBe(3);
    expect(new Set(shards.flatMap((s) => Object.keys(s.holders)))).toEqual(
      new Set(leases.map((l) => l.fence)),
    );
    await Promise.all(leases.map((l) => l.release()));
    expect(totalUsed(await storedShards(client, tableName, name))).toBe(0);
  });

  it('10 acquirers each wanting 2 of 5 permits over 2 shards (min 1): partial grants add up to exactly 5', async () => {
    const { name, instances } = contenders(10, { limit: 5, shards: 2 });
    const deadline = Date.now() + 3_000;
    const { leases, errors } = settledLeases(
      await Promise.allSettled(instances.map((sem) => sem.acquire(2, { min: 1, deadline }))),
    );
    for (const err of errors) expect(err).toBeInstanceOf(SemaphoreTimeoutError);
    for (const lease of leases) expect([1, 2]).toContain(lease.permits);
    expect(leases.reduce((sum, l) => sum + l.permits, 0)).toBe(5);

    const shards = await storedShards(client, tableName, name);
    expect(shards.map((s) => s.used).sort()).toEqual([2, 3]);
    for (const shard of shards) {
      expect(Object.values(shard.holders).reduce((sum, h) => sum + h.n, 0)).toBe(shard.used);
    }
    await Promise.all(leases.map((l) => l.release()));
    expect(totalUsed(await storedShards(client, tableName, name))).toBe(0);
  });

  it('once the holders of a full semaphore expire, racing acquirers reclaim exactly the limit', async () => {
    // Real time, shifted on demand: the stale leases expire at once, deadlines still pass.
    let skew = 0;
    const now = () => Date.now() + skew;
    const name = `reclaim-${randomUUID().slice(0, 8)}`;
    const make = (leaseMs: number) =>
      new DynamoSemaphore({ client, tableName, name, limit: 4, shards: 2, leaseMs, backoffBaseMs: 5, now });
    const stale = await Promise.all([make(1_000).acquire(2), make(1_000).acquire(2)]);
    expect(stale.map((l) => l.permits)).toEqual([2, 2]);

    skew += 1_001;
    const { leases, errors } = settledLeases(
      await Promise.allSettled(
        Array.from({ length: 8 }, () => make(60_000).acquire(1, { deadline: now() + 3_000 })),
      ),
    );
    expect(leases).toHaveLength(4);
    expect(errors).toHaveLength(4);
    const shards = await storedShards(client, tableName, name);
    expect(totalUsed(shards)).toBe(4);
    const holders = new Set(shards.flatMap((s) => Object.keys(s.holders)));
    expect(holders).toEqual(new Set(leases.map((l) => l.fence)));
    for (const old of stale) expect(holders.has(old.fence)).toBe(false);
    await Promise.all(leases.map((l) => l.release()));
  });
});
