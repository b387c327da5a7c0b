// Issue 14, defect 5: a redeploy with another limit (S3_PREFIX_WRITE_RATE) must take effect online, with no
// manual step, without over-granting while holders under the old limit still hold their permits.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DynamoSemaphore,
  type DynamoSemaphoreOptions,
  type Lease,
  SemaphoreTimeoutError,
} from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const deployment = (name: string, options: Partial<DynamoSemaphoreOptions> & { limit: number }) =>
  new DynamoSemaphore({ client, tableName, name, backoffBaseMs: 5, backoffCapMs: 20, ...options });

const held = async (name: string) => totalUsed(await storedShards(client, tableName, name));

/** Acquires single permits until one is refused at once; resolves the leases it got. */
async function takeAll(sem: DynamoSemaphore): Promise<Lease[]> {
  const leases: Lease[] = [];
  for (;;) {
    const lease = await sem.acquire(1, { deadline: Date.now() + 50 }).catch((e: unknown) => {
      if (e instanceof SemaphoreTimeoutError) return undefined;
      throw e;
    });
    if (lease === undefined) return leases;
    leases.push(lease);
  }
}

describe('changing a semaphore limit online', () => {
  it('shrinking: nothing is granted while the old holders exceed the new limit; it converges to the new limit', async () => {
    const name = `shrink-${randomUUID().slice(0, 8)}`;
    const before = deployment(name, { limit: 6 });
    const old = await Promise.all(Array.from({ length: 5 }, () => before.acquire(1)));
    const heldThen = await held(name);
    expect(heldThen).toBe(5);
    const after = deployment(name, { limit: 3 });
    const bound = Math.max(heldThen, 3);

    // 5 held > 3: no grant, and no SemaphoreConfigMismatchError either.
    await expect(after.acquire(1, { deadline: Date.now() + 100 })).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    const granted: Lease[] = [];
    while (old.length > 0) {
      await old.pop()!.release();
      granted.push(...(await takeAll(after)));
      expect(await held(name)).toBeLessThanOrEqual(bound);
      // A grant under the new limit happens only once the total fits it.
      if (granted.length > 0) expect(await held(name)).toBeLessThanOrEqual(3);
    }
    expect(granted).toHaveLength(3);
    expect(await held(name)).toBe(3);
    await Promise.all(granted.map((l) => l.release()));
    expect(await held(name)).toBe(0);
    expect(await takeAll(after)).toHaveLength(3);
  });

  it('growing: the new permits are usable at once, and no more', async () => {
    const name = `grow-${randomUUID().slice(0, 8)}`;
    const before = deployment(name, { limit: 4 });
    const old = await takeAll(before);
    expect(old).toHaveLength(4);
    const after = deployment(name, { limit: 9 });
    const more = await takeAll(after);
    expect(more).toHaveLength(5);
    expect(await held(name)).toBe(9);
    await Promise.all([...old, ...more].map((l) => l.release()));
    expect(await takeAll(after)).toHaveLength(9);
  });

  it('a limit whose default shard count differs (70 over 2 shards -> 50) keeps the stored shards and converges', async () => {
    const name = `reshard-${randomUUID().slice(0, 8)}`;
    const before = deployment(name, { limit: 70 });
    const old = await before.acquire(40, { min: 40 });
    const after = deployment(name, { limit: 50 });
    const granted = await after.acquire(30, { min: 1, deadline: Date.now() + 2_000 });
    // Per shard (35 + 35 -> 25 + 25), new grants only where used + n fits the new capacity.
    expect(await held(name)).toBeLessThanOrEqual(70);
    await old.release();
    await granted.release();
    const all = await takeAll(after);
    expect(all).toHaveLength(50);
    const shards = await storedShards(client, tableName, name);
    expect(shards.map((s) => s.capacity).sort()).toEqual([25, 25]);
    await Promise.all(all.map((l) => l.release()));
  });

  it('a rolling deploy (old and new limits acquiring at once) never holds more than the larger limit', async () => {
    const name = `rolling-${randomUUID().slice(0, 8)}`;
    const deployments = [deployment(name, { limit: 4 }), deployment(name, { limit: 9 })];
    let inHand = 0;
    let peak = 0;
    // Counted after acquire returned and before release was sent: the count can only overstate what is held.
    const worker = async (sem: DynamoSemaphore, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const lease = await sem.acquire(2, { min: 1, deadline: Date.now() + 5_000 });
        inHand += lease.permits;
        peak = Math.max(peak, inHand);
        await new Promise<void>((resolve) => setImmediate(resolve));
        inHand -= lease.permits;
        await lease.release();
      }
    };
    await Promise.all(deployments.flatMap((sem) => [worker(sem, 8), worker(sem, 8), worker(sem, 8)]));
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(9);
    expect(await held(name)).toBe(0);
  });
});
