// The acquire algorithm of lib/semaphore/README.md, observed through the requests it sends and the items it
// leaves: one write in the common case, the shard that fits a grant whole, else the roomiest shards in turn,
// the exact-min edge, limit changes and lost races handled within one round.
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DynamoSemaphore,
  type DynamoSemaphoreOptions,
  InvalidPermitRequestError,
} from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';
import { type Faults, faultInjecting, operationOf } from './support/fault-injecting-client.js';

let direct: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client: direct, tableName } = await semaphoreTable());
});

const CLOCK = 20_000_000;
const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

/**
 * Writes the shard items of semaphore `name` as another process would have left them: shard `i` holds
 * `held[i]` permits for one holder whose lease ends at `until`. `shards` (default: one per `held` entry) is
 * the count stored in every item.
 */
async function seed(
  name: string,
  {
    limit,
    held,
    until = CLOCK + 60_000,
    shards = held.length,
  }: { limit: number; held: readonly number[]; until?: number; shards?: number },
): Promise<void> {
  const num = (n: number): AttributeValue => ({ N: String(n) });
  await Promise.all(
    held.map((n, i) => {
      const capacity = Math.floor(limit / shards) + (i < limit % shards ? 1 : 0);
      const holders: Record<string, AttributeValue> =
        n > 0 ? { [`other-${i}`]: { M: { n: num(n), until: num(until) } } } : {};
      return direct.send(
        new PutItemCommand({
          TableName: tableName,
          Item: {
            pk: { S: `sem#${name}` },
            sk: { S: `shard#${i}` },
            capacity: num(capacity),
            used: num(n),
            holders: { M: holders },
            limit: num(limit),
            shards: num(shards),
          },
        }),
      );
    }),
  );
}

function semaphore(
  name: string,
  options: Partial<DynamoSemaphoreOptions> & { limit: number },
  faults: Faults = {},
) {
  const { client, calls } = faultInjecting(direct, faults);
  const sem = new DynamoSemaphore({
    client,
    tableName,
    name,
    now: () => CLOCK,
    backoffBaseMs: 1,
    backoffCapMs: 2,
    ...options,
  });
  return { sem, calls, operations: () => calls.map(operationOf) };
}

const fresh = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** Permits lease `fence` holds on each shard (0 where it has no entry). */
async function spread(name: string, fence: string): Promise<number[]> {
  const shards = await storedShards(direct, tableName, name);
  return shards.sort((a, b) => a.sk.localeCompare(b.sk)).map((s) => s.holders[fence]?.n ?? 0);
}

describe('DynamoSemaphore acquire rounds', () => {
  it('an uncontended acquire costs one write; a release one more; a second release nothing', async () => {
    const name = fresh('cheap');
    await seed(name, { limit: 4, held: [0] });
    const { sem, operations } = semaphore(name, { limit: 4 });
    const lease = await sem.acquire(3);
    expect(operations()).toEqual(['take']);
    await lease.release();
    await lease.release();
    expect(operations()).toEqual(['take', 'give-back']);
    expect(totalUsed(await storedShards(direct, tableName, name))).toBe(0);
  });

  it('the first acquire on a new semaphore creates every shard and is granted in that one round', async () => {
    const name = fresh('new');
    const { sem } = semaphore(name, { limit: 4, shards: 2 });
    expect(sem.shards).toBe(2);
    const lease = await sem.acquire(4, { deadline: CLOCK });
    expect(lease.permits).toBe(4);
    expect((await storedShards(direct, tableName, name)).map((s) => s.capacity)).toEqual([2, 2]);
  });

  it('after a round that found shards short it reads before writing; after one that found room it writes blind', async () => {
    const name = fresh('contended');
    await seed(name, { limit: 4, held: [3] });
    const { sem, operations } = semaphore(name, { limit: 4 });
    const small = await sem.acquire(2, { min: 1 }); // blind take of 2 fails: 1 free
    expect(small.permits).toBe(1);
    expect(operations()).toEqual(['take', 'survey', 'take']);
    await small.release();
    const before = operations().length;
    await (await sem.acquire(1)).release(); // still marked contended: survey first; finds room for 1
    expect(operations().slice(before)).toEqual(['survey', 'take', 'give-back']);
    const again = operations().length;
    await (await sem.acquire(1)).release(); // that survey showed room: blind again
    expect(operations().slice(again)).toEqual(['take', 'give-back']);
  });

  it('the blind first write goes to the shard the random start picks, not always shard 0', async () => {
    const name = fresh('start');
    await seed(name, { limit: 6, held: [0, 0, 0] });
    const { sem } = semaphore(name, { limit: 6, shards: 3, random: () => 0.99 });
    const lease = await sem.acquire(2);
    expect(await spread(name, lease.fence)).toEqual([0, 0, 2]);
  });

  it('takes the rest from the first shard (from the random start) that fits it whole', async () => {
    const name = fresh('whole');
    await seed(name, { limit: 9, held: [2, 0, 0] }); // free 1, 3, 3
    const { sem } = semaphore(name, { limit: 9, random: () => 0 });
    // Blind take of 3 on shard 0 fails (1 free); the survey's first whole fit from shard 0 is shard 1.
    const lease = await sem.acquire(3);
    expect(await spread(name, lease.fence)).toEqual([0, 3, 0]);
  });

  it('without a whole fit takes from the roomiest shards in turn, and writes nothing to a full one', async () => {
    const name = fresh('roomiest');
    await seed(name, { limit: 9, held: [3, 1, 0] }); // free 0, 2, 3
    const { sem, calls } = semaphore(name, { limit: 9, random: () => 0 });
    const lease = await sem.acquire(6, { min: 1 });
    expect(lease.permits).toBe(5);
    expect(await spread(name, lease.fence)).toEqual([0, 2, 3]);
    // Blind take on shard 0, then shard 2 (3 free) before shard 1 (2 free); shard 0 is not written again.
    const takes = calls.filter((c) => operationOf(c) === 'take').map((c) => c.input.Key?.sk?.S);
    expect(takes).toEqual(['shard#0', 'shard#2', 'shard#1']);
  });

  it('grants exactly min when exactly min are free', async () => {
    const name = fresh('exact');
    await seed(name, { limit: 4, held: [2] });
    const { sem } = semaphore(name, { limit: 4 });
    const lease = await sem.acquire(3, { min: 2, deadline: CLOCK });
    expect(lease.permits).toBe(2);
  });

  it('counts what the blind write already got toward min', async () => {
    const name = fresh('counted');
    await seed(name, { limit: 4, held: [0, 1] }); // shard 0: 2 free, shard 1: 1 free
    const { sem, operations } = semaphore(name, { limit: 4, shards: 2, random: () => 0 });
    // Blind take of 2 on shard 0; the survey sees 1 more free: 2 + 1 >= min 3, in the same round.
    const lease = await sem.acquire(4, { min: 3, deadline: CLOCK });
    expect(lease.permits).toBe(3);
    expect(await spread(name, lease.fence)).toEqual([2, 1]);
    expect(operations()).toEqual(['take', 'survey', 'take']);
  });

  it('the shard that fits the rest whole is the first from the random start, not the roomiest', async () => {
    const name = fresh('first-fit');
    await seed(name, { limit: 12, held: [3, 2, 0] }); // free 1, 2 (exactly the grant), 4
    const { sem } = semaphore(name, { limit: 12, shards: 3, random: () => 0 });
    // Blind take of 2 on shard 0 fails (1 free); from shard 0 on, shard 1 is the first with 2 free.
    const lease = await sem.acquire(2);
    expect(await spread(name, lease.fence)).toEqual([0, 2, 0]);
  });

  it('after a partial blind write, the rest goes whole to the first other shard that fits it', async () => {
    const name = fresh('rest-fit');
    await seed(name, { limit: 12, held: [0, 2, 0] }); // free 4, 2, 4
    const { sem, operations } = semaphore(name, { limit: 12, shards: 3, random: () => 0 });
    // Blind take of 4 (shard 0's capacity) of 6; the 2 left fit shard 1 exactly, before the roomier shard 2.
    const lease = await sem.acquire(6);
    expect(await spread(name, lease.fence)).toEqual([4, 2, 0]);
    expect(operations()).toEqual(['take', 'survey', 'take']);
  });

  it('spanning the roomiest shards stops writing once the grant is complete', async () => {
    const name = fresh('complete');
    await seed(name, { limit: 9, held: [1, 1, 1] }); // free 2, 2, 2: no shard fits 4 whole
    const { sem, calls } = semaphore(name, { limit: 9, shards: 3, random: () => 0 });
    const lease = await sem.acquire(4);
    expect(await spread(name, lease.fence)).toEqual([2, 2, 0]);
    const takes = calls.filter((c) => operationOf(c) === 'take').map((c) => c.input.Key?.sk?.S);
    expect(takes).toEqual(['shard#0', 'shard#0', 'shard#1']); // the blind take of 3, then 2 + 2
  });

  it('a shard left without capacity by a lower limit is never written blind', async () => {
    const name = fresh('no-capacity');
    await seed(name, { limit: 4, held: [0, 0, 0] }); // 3 shards; at limit 2 their capacities are 1, 1, 0
    const { sem, operations } = semaphore(name, { limit: 2, random: () => 0.99 });
    await (await sem.acquire(1)).release(); // adopts the 3 stored shards and rewrites them for limit 2
    expect(sem.shards).toBe(3);
    const before = operations().length;
    const lease = await sem.acquire(1); // the random start is shard 2, which has no capacity: read first
    expect(operations().slice(before)).toEqual(['survey', 'take']);
    const shards = await storedShards(direct, tableName, name);
    expect(shards.find((s) => s.sk === 'shard#2')?.holders).toEqual({});
    expect(lease.permits).toBe(1);
  });

  it('a survey that finds any one shard short marks the semaphore contended: the next acquire reads first', async () => {
    const name = fresh('one-short');
    await seed(name, { limit: 4, held: [2, 0] }); // shard 0 full, shard 1 free
    const { sem, operations } = semaphore(name, { limit: 4, shards: 2, random: () => 0 });
    await (await sem.acquire(1)).release(); // blind take on shard 0 fails; the survey sees it full
    const before = operations().length;
    await (await sem.acquire(1)).release();
    expect(operations().slice(before)).toEqual(['survey', 'take', 'give-back']);
  });

  it('a take that loses a race after a roomy survey marks the semaphore contended', async () => {
    const name = fresh('lost-take');
    await seed(name, { limit: 4, held: [0, 0] }); // free 2, 2: the survey finds every shard roomy
    // Another process takes 1 on shard 1 between our survey and our take there.
    const other = new DynamoSemaphore({
      client: direct,
      tableName,
      name,
      limit: 4,
      shards: 2,
      random: () => 0.99,
    });
    let theirs: Awaited<ReturnType<typeof other.acquire>> | undefined;
    const { sem, operations } = semaphore(
      name,
      { limit: 4, random: () => 0 },
      {
        before: async (call) => {
          if (operationOf(call) === 'take' && call.input.Key?.sk?.S === 'shard#1' && theirs === undefined)
            theirs = await other.acquire(1);
        },
      },
    );
    // Configured for 1 shard, the blind take fails on the stored 2; the survey adopts them, all roomy.
    const lease = await sem.acquire(4, { min: 2 });
    expect(lease.permits).toBe(2);
    expect(theirs?.permits).toBe(1);
    await lease.release();
    const before = operations().length;
    await (await sem.acquire(1)).release();
    expect(operations().slice(before)).toEqual(['survey', 'take', 'give-back']);
  });

  it('a retry reads before it writes, even after another acquire of the same semaphore found room', async () => {
    const name = fresh('retry-reads');
    await seed(name, { limit: 2, held: [2] }); // another process holds both permits
    const { sem, operations } = semaphore(name, { limit: 2, backoffBaseMs: 100, backoffCapMs: 100 });
    // Only the timers are fake: the DynamoDB round trips stay real, the waiter's backoff waits for the test.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const sleeps = vi.spyOn(globalThis, 'setTimeout');
      const waiting = sem.acquire(1);
      // (The SDK arms its own 3 s socket-usage check per request; it never fires here.)
      const backoffs = () => sleeps.mock.calls.filter(([, ms]) => ms !== 3_000).length;
      const giveUpAt = performance.now() + 10_000;
      while (backoffs() === 0 && performance.now() < giveUpAt) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(operations()).toEqual(['take', 'survey']); // nothing free: backing off
      await seed(name, { limit: 2, held: [0] }); // the other process gives both back
      const other = await sem.acquire(1); // still contended: reads, finds room, marks the shards roomy
      expect(operations()).toEqual(['take', 'survey', 'survey', 'take']);
      await vi.advanceTimersByTimeAsync(100);
      const lease = await waiting;
      // The waiter's second round reads first, as every round after the first does.
      expect(operations().slice(4)).toEqual(['survey', 'take']);
      await Promise.all([lease.release(), other.release()]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a partial grant below min is given back before waiting: a timeout holds nothing', async () => {
    const name = fresh('partial');
    await seed(name, { limit: 4, held: [0, 0] });
    let takes = 0;
    // The second take loses a race (condition failed): 2 of min 4 held, which must go back.
    const { sem } = semaphore(
      name,
      { limit: 4, random: () => 0 },
      {
        before: (call) => {
          if (operationOf(call) === 'take' && ++takes === 2) throw conditionFailed();
        },
      },
    );
    await expect(sem.acquire(4, { deadline: CLOCK })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
      min: 4,
    });
    const shards = await storedShards(direct, tableName, name);
    expect(totalUsed(shards)).toBe(0);
  });

  it('a deadline shorter than the backoff ends the wait at the deadline', async () => {
    const name = fresh('short');
    await seed(name, { limit: 2, held: [2], until: Date.now() + 60_000 });
    const { sem } = semaphore(name, {
      limit: 2,
      now: () => Date.now(),
      backoffBaseMs: 20_000,
      backoffCapMs: 20_000,
      random: () => 0.99,
    });
    const started = Date.now();
    await expect(sem.acquire(1, { deadline: started + 200 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('an acquire leaseMs overrides the default lease length', async () => {
    const name = fresh('lease');
    const { sem } = semaphore(name, { limit: 2, leaseMs: 1_000 });
    const lease = await sem.acquire(1, { leaseMs: 5_000 });
    expect(lease.expiresAt).toBe(CLOCK + 5_000);
    const [shard] = await storedShards(direct, tableName, name);
    expect(shard!.holders[lease.fence]!.until).toBe(CLOCK + 5_000);
    await expect(lease.extend(0)).rejects.toBeInstanceOf(InvalidPermitRequestError);
  });

  it('an already aborted signal rejects with its reason before any request', async () => {
    const { sem, calls } = semaphore(fresh('aborted'), { limit: 2 });
    const reason = new Error('too late');
    await expect(sem.acquire(1, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(calls).toEqual([]);
  });
});

describe('DynamoSemaphore surveys', () => {
  it('a lost race to create a shard is harmless and never resets what the winner holds', async () => {
    const name = fresh('create-race');
    // Another process creates the item and takes 3 permits just before our create lands.
    const other = new DynamoSemaphore({ client: direct, tableName, name, limit: 4 });
    let theirs: Awaited<ReturnType<typeof other.acquire>> | undefined;
    const { sem } = semaphore(
      name,
      { limit: 4 },
      {
        before: async (call) => {
          if (operationOf(call) === 'create' && theirs === undefined) theirs = await other.acquire(3);
        },
      },
    );
    const lease = await sem.acquire(1, { min: 1 });
    expect(lease.permits).toBe(1);
    expect(theirs?.permits).toBe(3);
    const [shard] = await storedShards(direct, tableName, name);
    expect(shard!.used).toBe(4);
    await expect(sem.acquire(1, { deadline: CLOCK })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
  });

  it('after a limit change the first round already grants under the new capacity', async () => {
    const name = fresh('grow');
    await seed(name, { limit: 4, held: [1] });
    const { sem, operations } = semaphore(name, { limit: 6 });
    const lease = await sem.acquire(5, { deadline: CLOCK });
    expect(lease.permits).toBe(5);
    expect(operations()).toContain('resize');
    expect((await storedShards(direct, tableName, name))[0]!.capacity).toBe(6);
  });

  it('a resize that loses the race grants nothing that round; the next survey reads the winner', async () => {
    const name = fresh('resize-race');
    await seed(name, { limit: 4, held: [0] });
    let lost = false;
    const { sem } = semaphore(
      name,
      { limit: 6 },
      {
        before: (call) => {
          if (operationOf(call) === 'resize' && !lost) {
            lost = true;
            throw conditionFailed();
          }
        },
      },
    );
    await expect(sem.acquire(5, { deadline: CLOCK })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
    });
    expect(totalUsed(await storedShards(direct, tableName, name))).toBe(0);
    const lease = await sem.acquire(5, { deadline: CLOCK });
    expect(lease.permits).toBe(5);
  });

  it('stored items that disagree on the shard count are SemaphoreConfigMismatchError, naming both shapes', async () => {
    const name = fresh('mismatch');
    await seed(name, { limit: 4, held: [0, 0, 0], shards: 2 }); // every item says 2 shards, yet shard#2 exists
    const odd = fresh('odd');
    await seed(odd, { limit: 4, held: [0, 0, 0] });
    await seed(odd, { limit: 4, held: [0, 0] }); // shard#2 still says 3, shard#0..1 say 2
    for (const stored of [name, odd]) {
      const { sem } = semaphore(stored, { limit: 4 });
      const err = await sem.acquire(1, { deadline: CLOCK }).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'SemaphoreConfigMismatchError', configured: { limit: 4 } });
    }
    const { sem } = semaphore(odd, { limit: 4 });
    const err = await sem.acquire(1, { deadline: CLOCK }).catch((e: unknown) => e);
    expect(err).toMatchObject({ stored: { shards: 3 }, configured: { shards: 2 } });
  });

  it('an item whose shard count differs from the first item is a mismatch even when its index is in range', async () => {
    const name = fresh('disagree');
    await seed(name, { limit: 4, held: [0, 0] }); // both items say 2 shards
    await seed(name, { limit: 4, held: [0], shards: 3 }); // shard#0 now says 3; shard#1 (index 1 < 3) says 2
    const { sem, calls } = semaphore(name, { limit: 4 });
    await expect(sem.acquire(1, { deadline: CLOCK })).rejects.toMatchObject({
      name: 'SemaphoreConfigMismatchError',
      stored: { shards: 2 },
      configured: { shards: 3 },
    });
    expect(calls.map(operationOf)).not.toContain('create');
  });
});
