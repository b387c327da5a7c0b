// The adaptive shard items on dynalite: they share the partition with a static semaphore of the same name
// and neither reads the other's items; only `adaptive#<n>` sort keys are shards; a release's decrease
// stamps `decreasedAt` and is refused once another decrease happened after the lease was taken.
import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { AdaptiveShardTable } from '../../../lib/semaphore/adaptive-shard-table.js';
import { AdaptiveDynamoSemaphore, DynamoSemaphore } from '../../../lib/semaphore/index.js';
import { semaphoreItems, semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const put = (name: string, sk: string, attributes: Record<string, { N: string }> = {}) =>
  client.send(
    new PutItemCommand({
      TableName: tableName,
      Item: { pk: { S: `sem#${name}` }, sk: { S: sk }, ...attributes },
    }),
  );

describe('AdaptiveShardTable (dynalite)', () => {
  it('a static and an adaptive semaphore of the same name each keep to their own items', async () => {
    const name = `shared-${randomUUID().slice(0, 8)}`;
    const fixed = new DynamoSemaphore({ client, tableName, name, limit: 3 });
    const adaptive = new AdaptiveDynamoSemaphore({
      client,
      tableName,
      name,
      limit: 10,
      adaptive: { ratePerSecond: 200, initialLatencyMs: 20 },
    });
    const a = await fixed.acquire(3);
    const b = await adaptive.acquire(4);
    expect([a.permits, b.permits]).toEqual([3, 4]);
    const Items = await semaphoreItems(client, tableName, name);
    expect(Items.map((item) => item.sk?.S).sort()).toEqual(['adaptive#0', 'shard#0']);
    // Each reads and writes its own: both are full, and both give back all they hold.
    await expect(fixed.acquire(1, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    await expect(adaptive.acquire(1, { deadline: Date.now() })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    await Promise.all([a.release(), b.release()]);
  });

  it('reads only `adaptive#<digits>` sort keys as shards, any number of digits; missing attributes read as 0', async () => {
    const name = `odd-keys-${randomUUID().slice(0, 8)}`;
    for (const sk of ['shard#0', 'adaptive#1x', 'xadaptive#2', 'adaptive#', 'adaptive#12']) {
      await put(name, sk, { capacity: { N: '5' } });
    }
    await put(name, 'adaptive#3');
    const items = await new AdaptiveShardTable(client, tableName, name).readAll();
    expect(items.map((i) => i.index).sort((x, y) => x - y)).toEqual([3, 12]);
    expect(items.find((i) => i.index === 3)).toEqual({
      index: 3,
      capacity: 0,
      free: 0,
      latencyMs: 0,
      decreasedAt: 0,
      shards: 0,
      holders: new Map(),
    });
  });

  it("a release's decrease stamps decreasedAt, and is refused when another decrease came after the lease was taken", async () => {
    const name = `decrease-${randomUUID().slice(0, 8)}`;
    const table = new AdaptiveShardTable(client, tableName, name);
    await table.create(0, 1, { capacity: 10, latencyMs: 20, decreasedAt: 0 });
    expect(await table.take(0, 1, 'early', { n: 2, until: 9_999_999 })).toBe(true);
    expect(await table.take(0, 1, 'late', { n: 2, until: 9_999_999 })).toBe(true);
    const decrease = (takenAt: number, at: number) => ({
      from: 10,
      delta: -3,
      latencyMs: 30,
      decrease: { at, takenAt },
    });
    expect(await table.giveBack(0, 'late', 2, decrease(500, 1_000))).toBe(true);
    expect(await storedAdaptiveShards(client, tableName, name)).toMatchObject([
      { capacity: 7, free: 5, latencyMs: 30, decreasedAt: 1_000, held: 2 },
    ]);
    // Taken at 400, before that decrease: its own decrease is refused (even were the capacity back at `from`).
    expect(await table.giveBack(0, 'early', 2, { ...decrease(400, 1_100), from: 7 })).toBe(false);
    expect(await table.giveBack(0, 'early', 2)).toBe(true);
    expect(await storedAdaptiveShards(client, tableName, name)).toMatchObject([
      { capacity: 7, free: 7, decreasedAt: 1_000, held: 0 },
    ]);
  });
});
