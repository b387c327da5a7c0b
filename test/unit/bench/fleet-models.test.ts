import { createRequire } from 'node:module';
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DynamoModelClient, DynamoTableModel, ExpressionCache } from '../../../bench/fleet/dynamodb-model.js';
import { costPerMillion } from '../../../bench/fleet/prices.js';
import { ContainerCpuStore, peakMean } from '../../../bench/fleet/s3-model.js';
import { ACKED, QueueWithEventSource, REDRIVEN } from '../../../bench/fleet/sqs-model.js';
import { installVirtualAbortTimeout } from '../../../bench/fleet/virtual-abort-timeout.js';
import { generateWorkload, sampleCdf, twoHotTenant, zipfCdf } from '../../../bench/fleet/workload.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import { isTimeout } from '../../../lib/errors/classify.js';
import { seededRandom } from '../../../lib/local/s3-behaviour/seeded-random.js';
import { DynamoRateBudget } from '../../../lib/semaphore/dynamo-rate-budget.js';

const key = { pk: { S: 'key#a' }, sk: { S: 'item#0' } };

function table(now = () => 0, writeUnitsPerSecond = 1000) {
  return new DynamoTableModel({ now, writeUnitsPerSecond, burstSeconds: 1 });
}

describe('DynamoTableModel', () => {
  it('charges the larger of before and after, one unit per started KB', () => {
    const t = table();
    t.execute('PutItem', { TableName: 't', Item: { ...key, blob: { S: 'x'.repeat(3000) } } });
    expect(t.stats.writeUnits).toBe(3);
    // Shrinking the item still costs the 3 KB it was before the write.
    t.execute('UpdateItem', {
      TableName: 't',
      Key: key,
      UpdateExpression: 'SET #blob = :small',
      ExpressionAttributeNames: { '#blob': 'blob' },
      ExpressionAttributeValues: { ':small': { S: 'y' } },
    });
    expect(t.stats.writeUnits).toBe(6);
    expect(t.report().largestItemBytes).toBeGreaterThan(3000);
  });

  it('evaluates the condition the caller sent: a failed one throws and still consumes units', () => {
    const t = table();
    t.execute('PutItem', { TableName: 't', Item: { ...key, used: { N: '5' } } });
    const take = (max: number) =>
      t.execute('UpdateItem', {
        TableName: 't',
        Key: key,
        UpdateExpression: 'SET used = used + :n',
        ConditionExpression: 'used <= :max',
        ExpressionAttributeValues: { ':n': { N: '1' }, ':max': { N: String(max) } },
      });
    expect(() => take(4)).toThrow(expect.objectContaining({ name: 'ConditionalCheckFailedException' }));
    take(5);
    expect(t.stats).toMatchObject({ conditionalFailures: 1, writeUnits: 3 });
    const read = t.execute('GetItem', { TableName: 't', Key: key }) as { Item: { used: { N: string } } };
    expect(read.Item.used.N).toBe('6');
  });

  it('throttles a partition key past its write units per second, and refills with time', () => {
    let now = 0;
    const t = table(() => now, 10);
    const put = (i: number) =>
      t.execute('PutItem', { TableName: 't', Item: { pk: { S: 'hot' }, sk: { S: `s${i}` } } });
    for (let i = 0; i < 10; i++) put(i);
    expect(() => put(10)).toThrow(
      expect.objectContaining({ name: 'ProvisionedThroughputExceededException' }),
    );
    // Another partition key is not affected.
    t.execute('PutItem', { TableName: 't', Item: { pk: { S: 'cold' }, sk: { S: 's' } } });
    // Half a second refills 5 units.
    now = 500;
    for (let i = 11; i < 16; i++) put(i);
    expect(() => put(16)).toThrow(
      expect.objectContaining({ name: 'ProvisionedThroughputExceededException' }),
    );
    expect(t.report().hottestPartition).toMatchObject({ key: 'hot', peakWriteUnitsPerSecond: 15 });
  });

  it('answers through the client port with SDK-shaped errors and retries throttling', async () => {
    let now = 0;
    const t = table(() => now, 1);
    const client = new DynamoModelClient(t, { latency: { medianMs: 0.01, p99Ms: 0.02 }, random: () => 0 });
    await client.send(new PutItemCommand({ TableName: 't', Item: key }));
    // Bucket empty: the first attempt is throttled; with random 0 the backoff is 0 and time moves on.
    now = 2000;
    await client.send(
      new UpdateItemCommand({
        TableName: 't',
        Key: key,
        UpdateExpression: 'SET n = :n',
        ExpressionAttributeValues: { ':n': { N: '1' } },
      }),
    );
    await expect(
      client.send(
        new PutItemCommand({ TableName: 't', Item: key, ConditionExpression: 'attribute_not_exists(pk)' }),
      ),
    ).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(client.counters.retries).toBe(2);
  });
});

describe('DynamoTableModel: the rate budget (docs/fleet-cap.md)', () => {
  it("lets the real DynamoRateBudget's GetItem, PutItem and UpdateItem decide: no two bookings share a slot", async () => {
    const t = table(() => Date.now(), 100_000);
    const client = new DynamoModelClient(t, {
      latency: { medianMs: 0.01, p99Ms: 0.05 },
      random: seededRandom(7),
    });
    const booked: { startAt: number; endsAt: number; writes: number }[] = [];
    const worker = async () => {
      const budget = new DynamoRateBudget({
        client: client as never,
        tableName: 't',
        name: 'prefix:x',
        ceiling: 100,
      });
      for (let i = 0; i < 4; i++) {
        const now = Date.now();
        const booking = await budget.book({ writes: 10, latestStart: now + 60_000, writeBy: now + 120_000 });
        booked.push({ startAt: booking.startAt, endsAt: booking.endsAt, writes: booking.writes });
        await booking.report({ accepted: 10, throttled: 0, starved: booking.queued });
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    // 10 writes at 100/s are 100 ms of slots: the bookings follow one another, none inside another's.
    booked.sort((a, b) => a.startAt - b.startAt);
    for (const [i, b] of booked.entries()) {
      expect(b.writes).toBe(10);
      expect(b.endsAt - b.startAt).toBe(100);
      if (i > 0) expect(b.startAt).toBeGreaterThanOrEqual(booked[i - 1]!.endsAt);
    }
    expect(t.stats.conditionalFailures).toBeGreaterThan(0);
    const [item] = t.itemsOf('rate#prefix:x');
    // One item of constant size: the rate at its ceiling, the first free slot after the last booking.
    expect(item).toMatchObject({ rate: { N: '100' }, freeAt: { N: String(booked.at(-1)!.endsAt) } });
    expect(item?.holders).toBeUndefined();
  });

  it('bills a strongly consistent GetItem one read unit per started 4 KB of the item, on its partition', () => {
    const t = table();
    const budgetKey = { pk: { S: 'rate#prefix:x' }, sk: { S: 'schedule' } };
    t.execute('PutItem', { TableName: 't', Item: { ...budgetKey, holders: { S: 'x'.repeat(5000) } } });
    t.execute('GetItem', { TableName: 't', Key: budgetKey, ConsistentRead: true });
    // A missing item still costs a unit.
    t.execute('GetItem', { TableName: 't', Key: { pk: { S: 'rate#prefix:y' }, sk: { S: 'schedule' } } });
    expect(t.stats).toMatchObject({ readRequests: 2, readUnits: 3 });
    expect(t.report().hottestReadPartition).toEqual({
      key: 'rate#prefix:x',
      readUnits: 2,
      peakReadUnitsPerSecond: 2,
    });
  });
});

describe('DynamoTableModel: read units', () => {
  it('reports the partition that spent the most read units, and its peak per second', () => {
    let now = 0;
    const t = table(() => now, 100_000);
    const read = (name: string) =>
      t.execute('GetItem', {
        TableName: 't',
        Key: { pk: { S: `rate#${name}` }, sk: { S: 'schedule' } },
        ConsistentRead: true,
      });
    for (let i = 0; i < 5; i++) read('prefix:hot');
    now = 1000;
    for (let i = 0; i < 3; i++) read('prefix:hot');
    read('prefix:cool');
    expect(t.report().hottestReadPartition).toEqual({
      key: 'rate#prefix:hot',
      readUnits: 8,
      peakReadUnitsPerSecond: 5,
    });
  });
});

/** Whether every message of `queue` is final within `ms` (a redelivery after the queue's hour is not). */
function settlesWithin(queue: QueueWithEventSource, ms: number): Promise<boolean> {
  return Promise.race([
    queue.whenSettled().then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);
}

describe('QueueWithEventSource', () => {
  const options = {
    batchSize: 2,
    batchingWindowMs: 0,
    maximumConcurrency: 1,
    visibilityTimeoutMs: 5,
    maxReceiveCount: 3,
    duplicateRate: 0,
  };

  it('redelivers failed records after the visibility timeout, and redrives after maxReceiveCount', async () => {
    const deliveries: number[][] = [];
    const queue = new QueueWithEventSource(
      3,
      options,
      () => 0.5,
      (index) => ({ messageId: `m-${index}` }) as never,
      async (_records, indices) => {
        deliveries.push(indices);
        // Message 1 always fails; the others succeed.
        return new Set(indices.filter((i) => i === 1));
      },
      () => 100,
    );
    queue.send(3);
    await queue.whenSettled();
    expect([...queue.state]).toEqual([ACKED, REDRIVEN, ACKED]);
    expect(deliveries.flat().filter((i) => i === 1)).toHaveLength(3);
    expect(queue.counters.redeliveries).toBe(2);
    expect(queue.counters.deleteRequests).toBeGreaterThanOrEqual(2);
  });

  it("applies the handler's ChangeMessageVisibility: a failed record reappears after the backoff, not the queue's timeout", async () => {
    const deliveries: number[] = [];
    let refusedStale = false;
    const queue: QueueWithEventSource = new QueueWithEventSource(
      2,
      { ...options, visibilityTimeoutMs: 3_600_000 },
      () => 0.5,
      (index, receive) => ({ messageId: `m-${index}`, receiptHandle: `${index}.${receive}` }) as never,
      async (records, indices) => {
        deliveries.push(...indices);
        if (!indices.includes(1) || queue.receivesOf(1) !== 1) return new Set<number>();
        // A stale receipt handle (an earlier receive) is refused; the current one is applied.
        refusedStale = !queue.changeVisibility('1.0', 0);
        expect(queue.changeVisibility(records[indices.indexOf(1)]!.receiptHandle, 0)).toBe(true);
        return new Set([1]);
      },
      () => 100,
    );
    queue.send(2);
    // Without the change, message 1 would come back after an hour.
    expect(await settlesWithin(queue, 2_000)).toBe(true);
    expect(refusedStale).toBe(true);
    expect(deliveries.filter((i) => i === 1)).toHaveLength(2);
    expect(queue.counters.visibilityChanges).toBe(1);
    expect([...queue.state]).toEqual([ACKED, ACKED]);
  });

  it('delivers a duplicate copy at the configured rate; a copy of a final message is counted, not re-settled', async () => {
    const queue = new QueueWithEventSource(
      2,
      { ...options, duplicateRate: 1, maxReceiveCount: 2 },
      () => 0,
      (index) => ({ messageId: `m-${index}` }) as never,
      async () => new Set<number>(),
      () => 100,
    );
    queue.send(2);
    await queue.whenSettled();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(queue.counters.duplicates).toBeGreaterThanOrEqual(2);
    expect(queue.counters.duplicateAcks).toBeGreaterThanOrEqual(1);
    expect([...queue.state]).toEqual([ACKED, ACKED]);
  });

  const copyAttributes = (origin: number) => ({
    's3-ingest-origin': {
      stringValue: `m-${origin}`,
      dataType: 'String',
      stringListValues: [],
      binaryListValues: [],
    },
  });

  it('delivers a deferred copy as a new message after its delay, with its attributes; the origin is written by the copy', async () => {
    const start = Date.now();
    const seen: Array<{ index: number; receive: number; body: string; attributes: unknown; at: number }> = [];
    const queue: QueueWithEventSource = new QueueWithEventSource(
      1,
      { ...options, visibilityTimeoutMs: 3_600_000 },
      () => 0.5,
      (index, _receive, _sentAt, origin, attributes) =>
        ({ messageId: `m-${index}`, body: `b-${origin}`, messageAttributes: attributes ?? {} }) as never,
      async (records, indices, receives) => {
        seen.push({
          index: indices[0]!,
          receive: queue.receivesOf(indices[0]!),
          body: records[0]!.body,
          attributes: records[0]!.messageAttributes,
          at: Date.now(),
        });
        // The first delivery is deferred (and acknowledged); the copy is written.
        if (indices[0] === 0) queue.defer(0, 0.05, copyAttributes(0), receives[0]!);
        return new Set<number>();
      },
      () => 100,
    );
    queue.send(1);
    await queue.whenSettled();
    expect(seen.map((s) => s.index)).toEqual([0, 1]);
    expect(seen[1]!.receive).toBe(1);
    expect(seen[1]!.body).toBe('b-0');
    expect(seen[1]!.attributes).toEqual(copyAttributes(0));
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(50);
    expect(queue.originOf(1)).toBe(0);
    expect([...queue.state]).toEqual([ACKED]);
    // Final when the copy was written, not when the deferred delivery was acknowledged.
    expect(queue.ackedAt[0]! - start).toBeGreaterThanOrEqual(50);
    expect(queue.counters).toMatchObject({
      deferrals: 1,
      deferredAcks: 1,
      redeliveries: 0,
      duplicateAcks: 0,
    });
  });

  it("follows a copy of a copy to its origin; a copy's redrive is the origin's fate, never written", async () => {
    let deferralsOf0 = 0;
    const queue: QueueWithEventSource = new QueueWithEventSource(
      2,
      { ...options, batchSize: 1, visibilityTimeoutMs: 1 },
      () => 0.5,
      (index) => ({ messageId: `m-${index}` }) as never,
      async (_records, [index], [receive]) => {
        const origin = queue.originOf(index!);
        // Origin 0: deferred twice, then its second copy is written. Origin 1: deferred once, and its
        // copy always fails (redriven after maxReceiveCount).
        if (origin === 0 && deferralsOf0++ < 2) queue.defer(index!, 0, copyAttributes(0), receive!);
        else if (origin === 1 && index === 1) queue.defer(index, 0, copyAttributes(1), receive!);
        else if (origin === 1) return new Set([index!]);
        return new Set<number>();
      },
      () => 100,
    );
    queue.send(2);
    await queue.whenSettled();
    expect([...queue.state]).toEqual([ACKED, REDRIVEN]);
    expect(queue.total).toBe(5);
    expect([2, 3, 4].map((copy) => queue.originOf(copy)).sort()).toEqual([0, 0, 1]);
    expect(queue.counters.deferrals).toBe(3);
    expect(queue.counters.deferredAcks).toBe(3);
  });

  it('a deferred delivery returned in batchItemFailures is redelivered: its ack is then a write', async () => {
    let deliveriesOf0 = 0;
    const queue: QueueWithEventSource = new QueueWithEventSource(
      1,
      { ...options, visibilityTimeoutMs: 1 },
      () => 0.5,
      (index) => ({ messageId: `m-${index}` }) as never,
      async (_records, indices, receives) => {
        if (indices[0] !== 0) return new Promise<Set<number>>(() => {}); // the copy never finishes
        deliveriesOf0 += 1;
        if (deliveriesOf0 === 1) {
          queue.defer(0, 3600, copyAttributes(0), receives[0]!);
          return new Set([0]);
        }
        return new Set<number>();
      },
      () => 100,
    );
    queue.send(1);
    await queue.whenSettled();
    expect(deliveriesOf0).toBe(2);
    expect([...queue.state]).toEqual([ACKED]);
    expect(queue.counters.deferredAcks).toBe(0);
  });

  // docs/fleet-simulation.md finding 6: a standard queue's duplicate puts one SQS message in flight twice;
  // both deliveries are receives of that one message, and a deferred record's data lives on in its copy.
  describe('a message in flight twice (a duplicate) and deferred', () => {
    /** The receive of a record, from the receipt handle `<index>.<receive>` the tests' records carry. */
    const receiveOf = (record: { receiptHandle: string }) => Number(record.receiptHandle.split('.')[1]);
    const handled = (index: number, receive: number) =>
      ({ messageId: `m-${index}`, receiptHandle: `${index}.${receive}` }) as never;
    /** The handler defers the record of message `index` (a copy), charged to `record`'s delivery. */
    const defer = (queue: QueueWithEventSource, index: number, record: { receiptHandle: string }) => {
      queue.defer(index, 0, copyAttributes(queue.originOf(index)), receiveOf(record));
      return new Set<number>();
    };
    /** The handler writes a delivery of `origin`'s data: the first time each origin was written. */
    const write = (writtenAt: Map<number, number>, origin: number) => {
      if (!writtenAt.has(origin)) writtenAt.set(origin, Date.now());
      return new Set<number>();
    };
    /**
     * The queue's random source when only its `k`-th draw leaves a duplicate (0 < the duplicate rate of
     * 0.5, 0.9 above it): the draws are the first receives, copies included, in order.
     */
    const duplicateOnlyAt = (k: number) => {
      let draws = 0;
      return () => (draws++ === k ? 0 : 0.9);
    };

    /** Final as written only once a delivery of its data was written (else: "lost", no object). */
    const expectSettledByAWrite = (
      queue: QueueWithEventSource,
      writtenAt: Map<number, number>,
      origin: number,
    ) => {
      expect(writtenAt.has(origin)).toBe(true);
      expect(queue.ackedAt[origin]).toBeGreaterThanOrEqual(writtenAt.get(origin)!);
    };

    it('a copy handed back by both its deliveries comes back once, and is not written by its second acknowledgement', async () => {
      const batches: number[][] = [];
      const writtenAt = new Map<number, number>();
      const queue: QueueWithEventSource = new QueueWithEventSource(
        1,
        // A batching window: two redeliveries due together would arrive in one batch.
        {
          ...options,
          batchSize: 2,
          batchingWindowMs: 20,
          duplicateRate: 0.5,
          visibilityTimeoutMs: 1,
          maxReceiveCount: 10,
        },
        // Only the copy's first receive (the second first receive there is) leaves a duplicate.
        duplicateOnlyAt(1),
        handled,
        async (records, indices) => {
          batches.push([...indices]);
          const [index] = indices;
          const origin = queue.originOf(index!);
          // The origin is deferred; the copy's two deliveries are handed back (past DEFERRAL_POLICY.maxDeferrals); its
          // redelivery is deferred once, as the handler does (one ledger entry per message id); the
          // second copy is written.
          if (index === 0 || (index === 1 && batches.length > 2)) return defer(queue, index, records[0]!);
          if (index === 1) return new Set([1]);
          return write(writtenAt, origin);
        },
        () => 100,
      );
      queue.send(1);
      await queue.whenSettled();
      // The duplicate's two receives in one batch, handed back: one redelivery, not two.
      expect(batches).toEqual([[0], [1, 1], [1], [2]]);
      expect([...queue.state]).toEqual([ACKED]);
      expectSettledByAWrite(queue, writtenAt, 0);
      expect(queue.counters).toMatchObject({ deferrals: 2, deferredAcks: 2 });
    });

    it('one deferral covers every delivery of its message in that invocation', async () => {
      const batches: number[][] = [];
      const writtenAt = new Map<number, number>();
      const queue: QueueWithEventSource = new QueueWithEventSource(
        1,
        { ...options, batchSize: 2, duplicateRate: 0.5, visibilityTimeoutMs: 1 },
        duplicateOnlyAt(0),
        handled,
        async (records, indices) => {
          batches.push([...indices]);
          const origin = queue.originOf(indices[0]!);
          // Both receives of message 0 in one batch: the handler defers the message once (one copy),
          // charged to the first delivery, and acknowledges both records.
          if (origin === 0 && indices[0] === 0) return defer(queue, 0, records[0]!);
          return write(writtenAt, origin);
        },
        () => 100,
      );
      queue.send(1);
      await queue.whenSettled();
      expect(batches).toEqual([[0, 0], [1]]);
      expectSettledByAWrite(queue, writtenAt, 0);
      expect(queue.counters).toMatchObject({ deferrals: 1, deferredAcks: 2, duplicateAcks: 0 });
    });

    it("handed back by both deliveries, the message reappears when its latest receive's visibility ends", async () => {
      const receives: number[] = [];
      const queue: QueueWithEventSource = new QueueWithEventSource(
        1,
        {
          ...options,
          batchSize: 1,
          maximumConcurrency: 2,
          duplicateRate: 0.5,
          visibilityTimeoutMs: 3_600_000,
        },
        // The first receive leaves a duplicate, delivered to a second invocation at once.
        duplicateOnlyAt(0),
        handled,
        async (records) => {
          const receive = receiveOf(records[0]!);
          receives.push(receive);
          if (receive >= 3) return new Set<number>();
          // The earlier receive fails first, its ChangeMessageVisibility refused (a stale receipt handle):
          // alone it would reappear after the queue's hour. The latest receive asks for 0 s, then fails.
          if (receive === 1) {
            expect(queue.changeVisibility('0.1', 0)).toBe(false);
            return new Set([0]);
          }
          await new Promise((resolve) => setTimeout(resolve, 5));
          expect(queue.changeVisibility('0.2', 0)).toBe(true);
          return new Set([0]);
        },
        () => 100,
      );
      queue.send(1);
      // Without the latest receive's change, message 0 would come back after an hour.
      expect(await settlesWithin(queue, 2_000)).toBe(true);
      expect(receives).toEqual([1, 2, 3]);
      expect([...queue.state]).toEqual([ACKED]);
    });

    it('two deliveries in two invocations at once, each deferred: neither acknowledgement is a write', async () => {
      const writtenAt = new Map<number, number>();
      let started = 0;
      let bothStarted: () => void = () => {};
      const together = new Promise<void>((resolve) => {
        bothStarted = resolve;
      });
      const queue: QueueWithEventSource = new QueueWithEventSource(
        1,
        { ...options, batchSize: 1, maximumConcurrency: 2, duplicateRate: 0.5 },
        // The origin's first receive leaves a duplicate, delivered to a second invocation at once.
        duplicateOnlyAt(0),
        handled,
        async (records, [index]) => {
          const origin = queue.originOf(index!);
          if (index === 0) {
            if (++started === 2) bothStarted();
            await together;
            return defer(queue, 0, records[0]!);
          }
          return write(writtenAt, origin);
        },
        () => 100,
      );
      queue.send(1);
      await queue.whenSettled();
      expect(started).toBe(2);
      expectSettledByAWrite(queue, writtenAt, 0);
      expect(queue.total).toBe(3);
      expect(queue.counters).toMatchObject({ deferrals: 2, deferredAcks: 2 });
    });
  });
});

describe('workload and reports', () => {
  it('Zipf(1.1) over 100 tenants gives the first about a fifth of the messages', () => {
    const cdf = zipfCdf(100, 1.1);
    expect(cdf[99]).toBeCloseTo(1, 12);
    expect(cdf[0]).toBeGreaterThan(0.18);
    expect(cdf[0]).toBeLessThan(0.3);
    expect(sampleCdf(cdf, 0)).toBe(0);
    expect(sampleCdf(cdf, 1)).toBe(99);
    const w = generateWorkload(
      { messages: 20_000, tenants: 100, skew: 'zipf', poisonRate: 0 },
      seededRandom(1),
    );
    const first = w.tenantOf.filter((t) => t === 0).length / 20_000;
    expect(Math.abs(first - cdf[0]!)).toBeLessThan(0.02);
  });

  it("matches bench:load's two-hot tenant pattern and puts a burst on tenant 0", () => {
    expect([0, 249, 250, 499, 500].map((i) => twoHotTenant(i, 50, 0.25))).toEqual([
      0,
      0,
      1,
      1,
      2 + (500 % 48),
    ]);
    const w = generateWorkload(
      {
        messages: 1000,
        tenants: 1000,
        skew: 'uniform',
        poisonRate: 0,
        burst: { from: 0, to: 500, share: 1 },
      },
      seededRandom(2),
    );
    expect(w.tenantOf.subarray(0, 500).every((t) => t === 0)).toBe(true);
    expect(w.tenantOf.subarray(500).filter((t) => t === 0).length).toBeLessThan(10);
  });

  it('peak mean over a window, and cost per million from counted requests', () => {
    expect(peakMean([1, 1, 10, 10, 1], 2)).toBe(10);
    expect(peakMean([4, 6], 10)).toBe(5);
    const cost = costPerMillion({
      messages: 2_000_000,
      lambdaGbSeconds: 0,
      lambdaRequests: 0,
      sqsRequests: 0,
      s3Puts: 2_000_000,
      s3Gets: 0,
      s3Heads: 0,
      s3Lists: 0,
      s3Deletes: 5,
      dynamoWriteUnits: 2_000_000,
      dynamoReadUnits: 0,
      logBytes: 2 ** 30,
    });
    // 1M PUTs at $0.005 per 1,000; 1M WRU at $0.625; 0.5 GB of logs at $0.50.
    expect(cost.s3).toBeCloseTo(5, 9);
    expect(cost.dynamodb).toBeCloseTo(0.625, 9);
    expect(cost.cloudwatch).toBeCloseTo(0.25, 9);
    expect(cost.total).toBeCloseTo(5.875, 9);
  });
});

describe('DynamoTableModel: split for heat (AWS "Isolate frequently accessed items")', () => {
  // 10 WCU/s per partition, one second of burst, a split after 5 s of throttling in every second.
  function hotTable(now: () => number, splitForHeatAfterSeconds = 5, readUnitsPerSecond = 3000) {
    return new DynamoTableModel({
      now,
      writeUnitsPerSecond: 10,
      readUnitsPerSecond,
      burstSeconds: 1,
      splitForHeatAfterSeconds,
    });
  }
  /** `n` one-unit writes to one item at the current instant; how many were accepted. */
  function writes(t: DynamoTableModel, pk: string, sk: string, n: number): number {
    let accepted = 0;
    for (let i = 0; i < n; i++) {
      try {
        t.execute('PutItem', { TableName: 't', Item: { pk: { S: pk }, sk: { S: sk }, i: { N: String(i) } } });
        accepted += 1;
      } catch (error) {
        expect(error).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
      }
    }
    return accepted;
  }

  it("splits a key's partition in two at its middle sort key only after it was throttled in every second for the set time", () => {
    let now = 0;
    const t = hotTable(() => now);
    const accepted: number[] = [];
    for (let second = 0; second <= 7; second++) {
      now = second * 1000;
      // 16 writes/s offered over two items; the shared partition takes 10.
      accepted.push(writes(t, 'key#x', 'item#0', 8) + writes(t, 'key#x', 'item#1', 8));
      if (second < 5) expect(t.report().splits).toEqual([]);
    }
    // Throttled from second 0; at second 5 the heat had lasted 5 s: item#1 gets its own partition.
    expect(t.report().splits).toEqual([{ key: 'key#x', atMs: 5000, from: 'item#1' }]);
    expect(accepted.slice(0, 5)).toEqual([10, 10, 10, 10, 10]);
    // From then on each item has 10 units/s of its own: all 16 fit.
    expect(accepted.slice(6)).toEqual([16, 16]);
    expect(t.report().hottestPartition?.key).toMatch(/^key#x/);
  });

  it('starts the count again after a second without a throttle', () => {
    let now = 0;
    const t = hotTable(() => now);
    const hot = () => writes(t, 'key#x', 'item#0', 8) + writes(t, 'key#x', 'item#1', 8);
    for (let second = 0; second <= 3; second++) {
      now = second * 1000;
      hot();
    }
    now = 4000;
    writes(t, 'key#x', 'item#0', 1); // second 4: no throttle
    for (let second = 5; second <= 10; second++) {
      now = second * 1000;
      hot();
      if (second < 10) expect(t.report().splits).toEqual([]);
    }
    expect(t.report().splits).toEqual([{ key: 'key#x', atMs: 10_000, from: 'item#1' }]);
  });

  it('never splits a single item: one item keeps the per-partition maximum', () => {
    let now = 0;
    const t = hotTable(() => now);
    for (let second = 0; second <= 20; second++) {
      now = second * 1000;
      expect(writes(t, 'key#one', 'item#0', 16)).toBe(10);
    }
    expect(t.report().splits).toEqual([]);
  });

  it('splits again, down to one item per partition, each split after its own heat', () => {
    let now = 0;
    const t = hotTable(() => now, 2);
    const items = ['item#0', 'item#1', 'item#2', 'item#3'];
    for (let second = 0; second <= 12; second++) {
      now = second * 1000;
      // 32 writes/s, two at a time to each item in turn.
      for (let round = 0; round < 4; round++) for (const sk of items) writes(t, 'key#x', sk, 2);
    }
    // The first split (at item#2, 2 s in) leaves two halves of 16 writes/s, each still too hot for 10/s:
    // each splits 2 s later.
    const splits = t.report().splits;
    expect(splits[0]).toEqual({ key: 'key#x', atMs: 2000, from: 'item#2' });
    expect(
      splits
        .slice(1)
        .map((split) => [split.from, split.atMs])
        .sort(),
    ).toEqual([
      ['item#1', 4000],
      ['item#3', 4000],
    ]);
    now = 13_000;
    expect(items.map((sk) => writes(t, 'key#x', sk, 8))).toEqual([8, 8, 8, 8]);
  });

  it('a query over a split key spends each partition its own read units; the bill is the same', () => {
    let now = 0;
    const t = hotTable(() => now, 1, 2);
    const blob = 'x'.repeat(3000);
    const query = () =>
      t.execute('Query', {
        TableName: 't',
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: 'key#x' } },
        ConsistentRead: true,
      });
    for (const sk of ['item#0', 'item#1'])
      t.execute('PutItem', {
        TableName: 't',
        Item: { pk: { S: 'key#x' }, sk: { S: sk }, blob: { S: blob } },
      });
    now = 1000;
    // One partition: 2 x 3 KB = 2 read units, all its bucket holds.
    query();
    expect(() => query()).toThrow(
      expect.objectContaining({ name: 'ProvisionedThroughputExceededException' }),
    );
    for (let second = 1; second <= 2; second++) {
      now = second * 1000;
      writes(t, 'key#x', 'item#2', 12);
    }
    expect(t.report().splits).toHaveLength(1);
    now = 3000;
    const before = t.stats.readUnits;
    // Split at item#1: each partition spends 1 unit of its 2 per query (3 KB each, and the small item#2
    // with item#1), so two queries fit; each is still billed 2 units (6 KB).
    query();
    query();
    expect(t.stats.readUnits - before).toBe(4);
    expect(() => query()).toThrow(
      expect.objectContaining({ name: 'ProvisionedThroughputExceededException' }),
    );
  });
});

describe('DynamoTableModel queries', () => {
  it('finds the partition from the key condition whatever its placeholder, in sort-key order', () => {
    const t = table();
    for (const sk of ['item#1', 'item#0'])
      t.execute('PutItem', { TableName: 't', Item: { pk: { S: 'a' }, sk: { S: sk } } });
    t.execute('PutItem', { TableName: 't', Item: { pk: { S: 'b' }, sk: { S: 'item#0' } } });
    const page = t.execute('Query', {
      TableName: 't',
      KeyConditionExpression: '#p = :name AND begins_with(sk, :prefix)',
      ExpressionAttributeNames: { '#p': 'pk' },
      ExpressionAttributeValues: { ':name': { S: 'a' }, ':prefix': { S: 'item#' } },
      ConsistentRead: true,
    }) as { Items: Array<{ sk: { S: string } }> };
    expect(page.Items.map((i) => i.sk.S)).toEqual(['item#0', 'item#1']);
  });

  it('hands out the stored items without a copy: frozen, and a later write leaves what was read unchanged', () => {
    const t = table();
    const holders = { M: { lease1: { M: { n: { N: '1' }, until: { N: '100' } } } } };
    const put = { TableName: 't', Item: { ...key, slots: { N: '5' }, holders } };
    t.execute('PutItem', put);
    const query = () =>
      t.execute('Query', {
        TableName: 't',
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': key.pk },
        ConsistentRead: true,
      }) as { Items: Array<Record<string, { N?: string; M?: Record<string, { M?: object }> }>> };
    const before = query().Items[0]!;
    // The caller's own objects are not the stored ones: changing them later changes nothing stored.
    holders.M.lease1.M.n.N = '9';
    expect(Object.isFrozen(before)).toBe(true);
    expect(Object.isFrozen(before.holders!.M!.lease1!.M)).toBe(true);
    expect(() => {
      before.slots!.N = '0';
    }).toThrow(TypeError);
    t.execute('UpdateItem', {
      TableName: 't',
      Key: key,
      UpdateExpression: 'SET slots = slots - :n, holders.lease2 = :entry',
      ExpressionAttributeValues: { ':n': { N: '2' }, ':entry': { M: { n: { N: '2' } } } },
    });
    const after = query().Items[0]!;
    expect(after.slots!.N).toBe('3');
    expect(Object.keys(after.holders!.M!)).toEqual(['lease1', 'lease2']);
    // What was read before the write is the item as it was then.
    expect(before.slots!.N).toBe('5');
    expect(Object.keys(before.holders!.M!)).toEqual(['lease1']);
    expect(JSON.stringify(before.holders)).toContain('"N":"1"');
    const got = t.execute('GetItem', { TableName: 't', Key: key }) as { Item: object };
    expect(got.Item).toBe(after);
  });
});

describe('ExpressionCache', () => {
  const dynalite = createRequire(import.meta.url)('dynalite/validations/index.js') as {
    validateExpressions(data: object): string | undefined;
  };
  const take = (lease: string, n: number) => ({
    UpdateExpression: 'SET #holders.#lease = :entry, #free = #free - :n',
    ConditionExpression: '#free >= :n AND attribute_not_exists(#holders.#lease)',
    ExpressionAttributeNames: { '#holders': 'holders', '#lease': lease, '#free': 'free' },
    ExpressionAttributeValues: { ':entry': { M: { n: { N: String(n) } } }, ':n': { N: String(n) } },
  });
  const parsed = (data: Record<string, unknown>) => ({ u: data._updates, c: data._condition });

  it("gives each request of a shape the parse dynalite gives it, with that request's names and values", () => {
    const cache = new ExpressionCache();
    for (const [lease, n] of [
      ['a-1', 3],
      ['b-2', 7],
      ['c-3', 1],
    ] as const) {
      const cached: Record<string, unknown> = take(lease, n);
      const direct: Record<string, unknown> = take(lease, n);
      expect(cache.parse(cached)).toBeUndefined();
      expect(dynalite.validateExpressions(direct)).toBeUndefined();
      expect(parsed(cached)).toEqual(parsed(direct));
    }
    expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 2, misses: 1 });
  });

  it("keeps dynalite's errors: an undefined placeholder, and names that collide only in one request", () => {
    const cache = new ExpressionCache();
    const undefinedValue = { ...take('a', 1), ExpressionAttributeValues: { ':n': { N: '1' } } };
    const error = dynalite.validateExpressions({ ...undefinedValue });
    expect(error).toMatch(/not defined/);
    expect(cache.parse({ ...undefinedValue })).toBe(error);
    expect(cache.parse({ ...undefinedValue })).toBe(error);
    // Two placeholders naming the same attribute overlap (an error); distinct ones do not.
    const two = (b: string) => ({
      UpdateExpression: 'SET #a = :x, #b = :x',
      ExpressionAttributeNames: { '#a': 'one', '#b': b },
      ExpressionAttributeValues: { ':x': { N: '1' } },
    });
    expect(cache.parse(two('two'))).toBeUndefined();
    const overlap = dynalite.validateExpressions(two('one'));
    expect(overlap).toMatch(/overlap/);
    expect(cache.parse(two('one'))).toBe(overlap);
  });
});

describe('ContainerCpuStore', () => {
  it("spends a container's CPU per S3 call one call after the other, so calls started together leave spaced out", async () => {
    const waits: number[] = [];
    const now = 1_000;
    const store = new ContainerCpuStore(
      new MemoryObjectStore({ bucket: 'cpu' }),
      1.5,
      async (ms) => {
        waits.push(ms);
      },
      () => now,
    );
    await Promise.all([store.put({ key: 'a', body: '{}' }), store.get('a'), store.head('a')]);
    expect(waits).toEqual([1.5, 3, 4.5]);
    // 0 ms per call passes calls straight through (no wait at all).
    const later = new ContainerCpuStore(new MemoryObjectStore({ bucket: 'cpu' }), 0, async (ms) => {
      waits.push(ms);
    });
    await later.put({ key: 'b', body: '{}' });
    expect(waits).toHaveLength(3);
  });
});

describe('installVirtualAbortTimeout', () => {
  const platformTimeout = AbortSignal.timeout;
  afterEach(() => {
    AbortSignal.timeout = platformTimeout;
    vi.useRealTimers();
  });

  it("puts AbortSignal.timeout on the global setTimeout's clock (a cell's virtual one), aborting with the platform's TimeoutError", () => {
    vi.useFakeTimers();
    installVirtualAbortTimeout();
    const signal = AbortSignal.timeout(1_000);
    vi.advanceTimersByTime(999);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).name).toBe('TimeoutError');
    expect(isTimeout(signal.reason)).toBe(true);
  });
});
