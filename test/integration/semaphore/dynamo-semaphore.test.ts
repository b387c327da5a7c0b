import { randomUUID } from 'node:crypto';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DynamoSemaphore,
  type DynamoSemaphoreOptions,
  InvalidPermitRequestError,
  InvalidSemaphoreOptionsError,
  LeaseLostError,
  SemaphoreTableNotFoundError,
  SemaphoreTimeoutError,
} from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const make = (options: Partial<DynamoSemaphoreOptions> & { limit: number }) =>
  new DynamoSemaphore({
    client,
    tableName,
    name: `t-${randomUUID().slice(0, 8)}`,
    backoffBaseMs: 5,
    ...options,
  });

describe('DynamoSemaphore against dynalite', () => {
  it('createTable is idempotent and refuses a table with another key schema', async () => {
    await expect(DynamoSemaphore.createTable(client, tableName)).resolves.toBeUndefined();
    const other = `other-${randomUUID().slice(0, 8)}`;
    await client.send(
      new CreateTableCommand({
        TableName: other,
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    const refusal = await DynamoSemaphore.createTable(client, other).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(InvalidSemaphoreOptionsError);
    expect((refusal as Error).message).toContain(`table "${other}" exists with key schema id:HASH`);
  });

  it('grants between min and k, never more than are free, and frees on release', async () => {
    const sem = make({ limit: 5 });
    const first = await sem.acquire(3);
    expect(first.permits).toBe(3);
    const second = await sem.acquire(3, { min: 1 });
    expect(second.permits).toBe(2);
    await expect(sem.acquire(1, { deadline: Date.now() + 100 })).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    expect(totalUsed(await storedShards(client, tableName, sem.name))).toBe(5);

    await first.release();
    await first.release(); // idempotent
    const third = await sem.acquire(3, { deadline: Date.now() + 1_000 });
    expect(third.permits).toBe(3);
    await Promise.all([second.release(), third.release()]);
    const shards = await storedShards(client, tableName, sem.name);
    expect(totalUsed(shards)).toBe(0);
    expect(shards.flatMap((s) => Object.keys(s.holders))).toEqual([]);
  });

  it('splits the limit over shard items and spans shards for a large grant under one fence', async () => {
    const sem = make({ limit: 10, shards: 3 });
    const lease = await sem.acquire(10);
    const shards = await storedShards(client, tableName, sem.name);
    expect(shards.map((s) => s.capacity).sort()).toEqual([3, 3, 4]);
    expect(shards.map((s) => s.used).sort()).toEqual([3, 3, 4]);
    for (const shard of shards) expect(Object.keys(shard.holders)).toEqual([lease.fence]);
    await lease.release();
    expect(totalUsed(await storedShards(client, tableName, sem.name))).toBe(0);
  });

  it('holds nothing after a timeout or an abort', async () => {
    const sem = make({ limit: 4, shards: 2 });
    const held = await sem.acquire(3);
    await expect(sem.acquire(2, { deadline: Date.now() + 150 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
      min: 2,
    });
    const controller = new AbortController();
    const aborted = sem.acquire(4, { signal: controller.signal });
    const reason = new Error('invocation ending');
    setTimeout(() => controller.abort(reason), 30);
    await expect(aborted).rejects.toBe(reason);
    const shards = await storedShards(client, tableName, sem.name);
    expect(totalUsed(shards)).toBe(3);
    expect(new Set(shards.flatMap((s) => Object.keys(s.holders)))).toEqual(new Set([held.fence]));
    await held.release();
  });

  it('reclaims an expired holder, and the stale holder can neither release nor extend what others now hold', async () => {
    let clock = Date.now();
    const now = () => clock;
    const name = `t-${randomUUID().slice(0, 8)}`;
    const stale = new DynamoSemaphore({ client, tableName, name, limit: 3, leaseMs: 1_000, now });
    const fresh = new DynamoSemaphore({ client, tableName, name, limit: 3, leaseMs: 60_000, now });
    const old = await stale.acquire(3);
    expect(old.expiresAt).toBe(clock + 1_000);
    await expect(fresh.acquire(1, { deadline: clock })).rejects.toBeInstanceOf(SemaphoreTimeoutError);

    clock += 1_001;
    const taken = await fresh.acquire(3, { deadline: clock });
    expect(taken.permits).toBe(3);

    await old.release(); // late release by the reclaimed lease: must free nothing
    let shards = await storedShards(client, tableName, name);
    expect(totalUsed(shards)).toBe(3);
    expect(Object.keys(shards[0]!.holders)).toEqual([taken.fence]);
    await expect(old.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);

    await taken.extend(5_000);
    expect(taken.expiresAt).toBe(clock + 5_000);
    shards = await storedShards(client, tableName, name);
    expect(shards[0]!.holders[taken.fence]!.until).toBe(clock + 5_000);
    await taken.release();
    expect(totalUsed(await storedShards(client, tableName, name))).toBe(0);
  });

  it('an extended lease is not reclaimed at its original expiry', async () => {
    let clock = Date.now();
    const now = () => clock;
    const name = `t-${randomUUID().slice(0, 8)}`;
    const holder = new DynamoSemaphore({ client, tableName, name, limit: 2, leaseMs: 1_000, now });
    const other = new DynamoSemaphore({ client, tableName, name, limit: 2, now });
    const lease = await holder.acquire(2);
    await lease.extend(10_000);
    clock += 2_000;
    await expect(other.acquire(1, { deadline: clock })).rejects.toBeInstanceOf(SemaphoreTimeoutError);
    await lease.release();
    await (await other.acquire(2, { deadline: clock })).release();
  });

  it('a process with another limit rewrites the stored capacity; another shard count adopts the stored one', async () => {
    const name = `t-${randomUUID().slice(0, 8)}`;
    const a = new DynamoSemaphore({ client, tableName, name, limit: 5 });
    const lease = await a.acquire(1);
    const b = new DynamoSemaphore({ client, tableName, name, limit: 6 });
    const more = await b.acquire(5);
    expect(more.permits).toBe(5);
    expect((await storedShards(client, tableName, name)).map((s) => s.capacity)).toEqual([6]);
    const c = new DynamoSemaphore({ client, tableName, name, limit: 6, shards: 2 });
    expect(c.shards).toBe(2);
    await expect(c.acquire(1, { deadline: Date.now() + 100 })).rejects.toBeInstanceOf(SemaphoreTimeoutError);
    expect(c.shards).toBe(1);
    expect(totalUsed(await storedShards(client, tableName, name))).toBe(6);
    await Promise.all([lease.release(), more.release()]);
  });

  it('maps a missing table to SemaphoreTableNotFoundError', async () => {
    const sem = new DynamoSemaphore({ client, tableName: 'no-such-table', name: 'x', limit: 2 });
    const err = await sem.acquire(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SemaphoreTableNotFoundError);
    expect(err).toMatchObject({ name: 'SemaphoreTableNotFoundError', tableName: 'no-such-table' });
  });

  it('rejects impossible requests and options with typed errors before any write', async () => {
    const sem = make({ limit: 3 });
    for (const [k, min] of [
      [0, undefined],
      [-1, undefined],
      [1.5, undefined],
      [4, undefined],
      [Number.NaN, undefined],
      [2, 3],
      [2, 0],
      [2, 1.5],
    ] as const) {
      await expect(sem.acquire(k, { min })).rejects.toBeInstanceOf(InvalidPermitRequestError);
    }
    await expect(sem.acquire(1, { leaseMs: 0 })).rejects.toMatchObject({ name: 'InvalidPermitRequestError' });
    expect(await storedShards(client, tableName, sem.name)).toEqual([]);
    expect(() => make({ limit: 0 })).toThrow(InvalidSemaphoreOptionsError);
    expect(() => make({ limit: 2, shards: 3 })).toThrow(InvalidSemaphoreOptionsError);
    expect(() => make({ limit: 2, leaseMs: -1 })).toThrow(InvalidSemaphoreOptionsError);
    expect(() => make({ limit: 2, name: '' })).toThrow(InvalidSemaphoreOptionsError);
  });
});
