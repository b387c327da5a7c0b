// A lease's resize against what other holders do to the same shard at the same time (dynalite): a reclaim
// that read the entry before the resize grew it, a shard over-granted by a shrink, a multi-shard resize with
// one shard failing, a release sent while the resize is in flight. None may leave `free` apart from
// `capacity - held`, nor let `held` grow above `capacity`.
import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptiveDynamoSemaphore,
  type AdaptiveDynamoSemaphoreOptions,
} from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';
import { faultInjecting, operationOf, throttled } from './support/fault-injecting-client.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const stored = (name: string) => storedAdaptiveShards(client, tableName, name);
const fresh = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

// 100/s at an assumed 40 ms, no slack: 4 permits in all; a holder measuring 60 ms rescales x1.5.
const semaphore = (name: string, over: Partial<AdaptiveDynamoSemaphoreOptions> = {}) =>
  new AdaptiveDynamoSemaphore({
    client,
    tableName,
    name,
    limit: 50,
    adaptive: { ratePerSecond: 100, initialLatencyMs: 40 },
    backoffBaseMs: 5,
    backoffCapMs: 20,
    ...over,
  });

const slow = { succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 };

/** Every shard's `free` is its capacity less what its holders hold. */
async function expectConsistent(name: string): Promise<void> {
  for (const shard of await stored(name)) expect(shard.free).toBeCloseTo(shard.capacity - shard.held, 9);
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('AdaptiveLease.resize races (dynalite)', () => {
  it('a reclaim that read an expired entry before its resize: frees what the entry holds, not what it read', async () => {
    const name = fresh('reclaim');
    let clock = 1_000_000;
    const now = () => clock;
    const holder = semaphore(name, { now, leaseMs: 1_000 });
    const lease = await holder.acquire(10, { min: 1 });
    expect(lease.permits).toBe(4);
    clock += 5_000;
    // The expired holder resizes between the reclaimer's read and its reclaim.
    const { client: racing } = faultInjecting(client, {
      before: async (call) => {
        if (operationOf(call) === 'reclaim') expect(await lease.resize!(slow)).toBe(6);
      },
    });
    const other = semaphore(name, { now, client: racing });
    const taken = await other.acquire(1, { deadline: clock + 1_000 });
    await expectConsistent(name);
    await taken.release();
    await lease.release().catch(() => undefined);
    await expectConsistent(name);
  });

  it('a shard whose holders exceed its capacity (a shrink): the resize grants nothing more', async () => {
    const name = fresh('shrunk');
    const sem = semaphore(name);
    const lease = await sem.acquire(10, { min: 1 });
    expect(lease.permits).toBe(4);
    // What a grow, takes by others and a shrink back to the same capacity leave: 3 held above the capacity.
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: `sem#${name}` }, sk: { S: 'adaptive#0' } },
        UpdateExpression: 'SET #holders.#other = :entry, #free = #free - :n',
        ExpressionAttributeNames: { '#holders': 'holders', '#other': 'other', '#free': 'free' },
        ExpressionAttributeValues: {
          ':entry': { M: { n: { N: '3' }, until: { N: String(Date.now() + 60_000) } } },
          ':n': { N: '3' },
        },
      }),
    );
    expect(await stored(name)).toMatchObject([{ capacity: 4, free: -3, held: 7 }]);
    await lease.resize!(slow);
    const [shard] = await stored(name);
    expect(lease.permits).toBe(4);
    expect(shard).toMatchObject({ held: 7 });
    await expectConsistent(name);
    await lease.release();
  });

  it('a two-shard resize with one shard failing: settles after the other, and the release gives back all', async () => {
    const name = fresh('shards');
    const openSecond = deferred();
    const secondAnswered = deferred();
    let resizes = 0;
    const { client: faulty } = faultInjecting(client, {
      before: async (call) => {
        const op = operationOf(call);
        if (op === 'resize' && ++resizes === 1) {
          // The first shard's resize fails; the other is sent on the next turn.
          setImmediate(openSecond.resolve);
          throw throttled();
        }
        if (op === 'resize') await openSecond.promise;
        // A give-back sent while the second resize is in flight reaches DynamoDB after it.
        if (op === 'give-back') {
          await secondAnswered.promise;
          await nextTurn();
        }
      },
      after: (call) => {
        if (operationOf(call) === 'resize') secondAnswered.resolve();
      },
    });
    const sem = semaphore(name, { client: faulty, shards: 2 });
    const lease = await sem.acquire(10, { min: 1 });
    expect(lease.permits).toBe(4);
    await expect(lease.resize!(slow)).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
      message: expect.stringContaining('throughput'),
    });
    const permits = lease.permits;
    await lease.release();
    expect((await stored(name)).map((s) => s.held)).toEqual([0, 0]);
    // Nothing the resize sent still moves the lease once it has settled.
    expect(lease.permits).toBe(permits);
    await expectConsistent(name);
  });

  it('a release sent while the resize is in flight, its answer arriving meanwhile: gives back the resized count', async () => {
    const name = fresh('release');
    const resizeSent = deferred();
    const releaseSent = deferred();
    const resizeAnswered = deferred();
    const { client: racing } = faultInjecting(client, {
      before: async (call) => {
        const op = operationOf(call);
        if (op === 'resize') {
          resizeSent.resolve();
          await releaseSent.promise;
        }
        // The give-back (of the count the lease knew) reaches DynamoDB after the resize and its answer.
        if (op === 'give-back') {
          releaseSent.resolve();
          await resizeAnswered.promise;
          await nextTurn();
        }
      },
      after: (call) => {
        if (operationOf(call) === 'resize') resizeAnswered.resolve();
      },
    });
    const sem = semaphore(name, { client: racing });
    const lease = await sem.acquire(10, { min: 1 });
    const resizing = lease.resize!(slow);
    await resizeSent.promise;
    await lease.release();
    expect(await resizing).toBe(6);
    expect(await stored(name)).toMatchObject([{ capacity: 6, free: 6, held: 0 }]);
  });

  it('a lease that holds all it asked for: the resize moves the latency its permits stand for, not the permits', async () => {
    const name = fresh('whole');
    const sem = semaphore(name);
    const lease = await sem.acquire(4);
    expect(lease.latencyMs).toBe(40);
    expect(await lease.resize!(slow)).toBe(4);
    expect(lease.latencyMs).toBe(60);
    expect(await stored(name)).toMatchObject([{ capacity: 6, free: 2, held: 4, latencyMs: 60 }]);
    await lease.release();
  });

  it('a signal aborted before the resize: rejects with its reason, sends nothing, the release gives back all', async () => {
    const name = fresh('aborted');
    const { client: counting, calls } = faultInjecting(client);
    const sem = semaphore(name, { client: counting });
    const lease = await sem.acquire(10, { min: 1 });
    const cutoff = new AbortController();
    cutoff.abort(new Error('cutoff'));
    await expect(lease.resize!(slow, { signal: cutoff.signal })).rejects.toMatchObject({
      name: 'Error',
      message: 'cutoff',
    });
    expect(lease.permits).toBe(4);
    expect(await stored(name)).toMatchObject([{ capacity: 4, held: 4 }]);
    await lease.release();
    expect(calls.filter((c) => operationOf(c) === 'resize').length).toBeLessThanOrEqual(1);
    expect(await stored(name)).toMatchObject([{ capacity: 4, free: 4, held: 0 }]);
  });

  it('NaN, Infinity, 0 or negative in the usage: no write, the same permits; an infinite slot time moves x4 at most', async () => {
    const name = fresh('odd');
    const sem = semaphore(name);
    const lease = await sem.acquire(10, { min: 1 });
    for (const odd of [
      { succeeded: 10, throttled: 0, attemptMs: Number.NaN, writes: 10 },
      { succeeded: 10, throttled: 0, attemptMs: 600, writes: Number.NaN },
      { succeeded: 10, throttled: 0, attemptMs: 600, writes: Number.POSITIVE_INFINITY },
      { succeeded: 10, throttled: 0, attemptMs: -600, writes: 10 },
      { succeeded: 10, throttled: 0, attemptMs: 600, writes: -10 },
      { succeeded: 0, throttled: 0, attemptMs: 600 },
    ])
      expect(await lease.resize!(odd)).toBe(4);
    expect(await stored(name)).toMatchObject([{ capacity: 4, latencyMs: 40 }]);
    // x4: 16 permits at 160 ms, of which the lease takes what it asked for (10).
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: Number.POSITIVE_INFINITY })).toBe(
      10,
    );
    expect(await stored(name)).toMatchObject([{ capacity: 16, free: 6, held: 10, latencyMs: 160 }]);
    await lease.release();
    await expectConsistent(name);
  });
});
