import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { INVALID_MESSAGE_REASONS } from '../../../lib/ingest/errors.js';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { ExecutorPool } from '../../../lib/pool/executor-pool.js';
import { loadBadMessages, loadGoodMessages } from '../../fixtures/messages.js';
import {
  failedIds,
  ids,
  internalError,
  keyOf,
  lambdaContext,
  sqsEvent,
  sqsRecord,
  TrackingStore,
  testHandler,
} from './handler/support.js';

const handlers: IngestHandler[] = [];

afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

async function setup(env: Record<string, string> = {}, store?: TrackingStore) {
  const t = testHandler(env, store === undefined ? {} : { store });
  handlers.push(t.handler);
  return t;
}

describe('response shapes', () => {
  it('acknowledges an empty batch with an empty list', async () => {
    const { handler, summaries } = await setup();
    await expect(handler({ Records: [] }, lambdaContext(30_000))).resolves.toEqual({ batchItemFailures: [] });
    expect(summaries[0]).toMatchObject({ records: 0, RecordsProcessed: 0, RecordsFailed: 0 });
  });

  it('lists exactly the record whose write failed transiently', async () => {
    const { handler, store, summaries } = await setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-2')) throw internalError();
    };
    const event = sqsEvent([{ id: 'o-1' }, { id: 'o-2' }, { id: 'o-3' }]);
    const response = await handler(event, lambdaContext(30_000));
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[1]!.messageId }] });
    expect(store.keys()).toEqual([keyOf('acme', 'orders', 'o-1'), keyOf('acme', 'orders', 'o-3')]);
    expect(summaries[0]).toMatchObject({ RecordsProcessed: 2, RecordsFailed: 1, RecordsDeadLettered: 0 });
  });

  it('lists every record when every write is throttled (a full failure is never acknowledged)', async () => {
    // No write tokens at all: every PUT is answered 503 SlowDown, as S3 does to an overloaded prefix.
    const model = new S3BehaviourModel({ writesPerSecond: 0 });
    const store = new TrackingStore({ model });
    const { handler, summaries } = await setup({ WRITE_RETRIES: '1' }, store);
    const event = sqsEvent([
      { id: 'o-1' },
      { id: 'o-2', op: 'insert' },
      { tenant: 'globex', id: 'g-1' },
      { op: 'delete', id: 'o-3' },
    ]);
    const response = await handler(event, lambdaContext(30_000));
    expect(response.batchItemFailures).not.toEqual([]);
    expect(failedIds(response)).toEqual(ids(event).sort());
    expect(store.keys()).toEqual([]);
    expect(model.stats().total.throttled).toBe(8); // 4 writes x (1 attempt + 1 retry)
    expect(summaries[0]).toMatchObject({ RecordsProcessed: 0, RecordsFailed: 4, S3SlowDowns: 8, Retries: 4 });
  });

  it('redelivers (not acknowledges) a record whose handling threw unexpectedly', async () => {
    const { handler, store } = await setup();
    store.hook = () => {
      throw new TypeError('bug');
    };
    const event = sqsEvent([{ id: 'o-1' }]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(ids(event));
  });
});

describe('permanent failures go to the DLQ with their reason, not to batchItemFailures', () => {
  it('dead-letters every corpus message with its precise reason, writes the good ones, stays in t=<tenant>/', async () => {
    const bad = loadBadMessages();
    const good = loadGoodMessages();
    // The corpus declares its resources schemaless: good messages carry arbitrary data.
    const { handler, store, summaries, deadLetters } = await setup({
      POOL_CONCURRENCY: '16',
      RESOURCES: JSON.stringify(Object.fromEntries([...bad.resources].map((r) => [r, {}]))),
    });
    // Bodies SQS itself would refuse (over 1 MiB with the DLQ's attributes) cannot reach a handler.
    const sendable = bad.messages.filter((m) => Buffer.byteLength(m.body) < 1_000_000);
    const badRecords = sendable.map((m) => sqsRecord(m.body));
    const goodRecords = good.messages.map((m) => sqsRecord(m.body, m.messageId));
    // Good writes touch the same records (o-1 ...), in message order; interleave bad ones around them.
    const records = [...badRecords.slice(0, 60), ...goodRecords, ...badRecords.slice(60)];
    const response = await handler({ Records: records }, lambdaContext(60_000));

    expect(response).toEqual({ batchItemFailures: [] });
    const letters = deadLetters.letters;
    for (const record of goodRecords)
      expect(letters.get(record.messageId), record.body.slice(0, 300)).toBeUndefined();
    expect(letters.size).toBe(sendable.length);
    sendable.forEach((m, i) => {
      const letter = letters.get(badRecords[i]!.messageId);
      expect(letter, m.name).toBeDefined();
      expect(letter!.reason, m.name).toBe(m.reason);
      expect(letter!.errorName, m.name).toBe('InvalidMessageError');
      expect(letter!.detail, m.name).not.toBe('');
      // The sink gets the original body verbatim (the SQS DLQ's own encoding is tested in integration).
      expect(letter!.body, m.name).toBe(m.body);
    });
    // Every reason of the contract is exercised by the corpus.
    expect(new Set(sendable.map((m) => m.reason))).toEqual(new Set(INVALID_MESSAGE_REASONS));
    for (const record of goodRecords) expect(letters.has(record.messageId)).toBe(false);

    const goodTenants = new Set(good.messages.map((m) => (JSON.parse(m.body) as { tenant: string }).tenant));
    expect(store.keys().length).toBeGreaterThan(0);
    for (const key of store.keys()) {
      const tenant = /^t=([a-z0-9][a-z0-9_-]{0,62})\/r=[a-z0-9_-]+\/id=[^/]+\.json$/.exec(key)?.[1];
      expect(tenant, key).toBeDefined();
      expect(goodTenants.has(tenant!), key).toBe(true);
    }
    expect(summaries[0]).toMatchObject({
      RecordsDeadLettered: sendable.length,
      RecordsProcessed: good.messages.length,
      RecordsFailed: 0,
    });
  });

  it('dead-letters a schema violation naming the field, and an update of a missing record', async () => {
    const { handler, store, deadLetters } = await setup();
    const event = sqsEvent([
      { resource: 'customers', id: 'c-1', data: { name: 'Ada', age: -3 } },
      { resource: 'customers', id: 'c-2', data: { name: 'Bob' } },
      { resource: 'customers', op: 'update', id: 'c-2', data: { age: 'old' } },
      { op: 'update', id: 'missing', data: { status: 'paid' } },
    ]);
    const response = await handler(event, lambdaContext(30_000));
    expect(response).toEqual({ batchItemFailures: [] });
    const letters = deadLetters.letters;
    const [violation, , patchViolation, missing] = event.Records;
    expect(letters.get(violation!.messageId)).toMatchObject({
      reason: 'schema-violation',
      errorName: 'ValidationError',
      tenant: 'acme',
    });
    expect(letters.get(violation!.messageId)?.detail).toContain('age');
    expect(letters.get(violation!.messageId)?.body).toBe(violation!.body);
    expect(letters.get(patchViolation!.messageId)?.reason).toBe('schema-violation');
    expect(letters.get(patchViolation!.messageId)?.detail).toContain('age');
    // An update of a record no write created yet may precede an older upsert still on its way: it is kept
    // as a hidden pending partial (acknowledged), not dead-lettered (issue 15).
    expect(letters.has(missing!.messageId)).toBe(false);
    expect(store.record(keyOf('acme', 'orders', 'missing'))).toMatchObject({
      $seq: { h: 1, p: { status: 'paid' } },
    });
    expect(letters.size).toBe(2);
    expect(store.keys()).toEqual([keyOf('acme', 'customers', 'c-2'), keyOf('acme', 'orders', 'missing')]);
    expect(store.record(keyOf('acme', 'customers', 'c-2'))).toMatchObject({ name: 'Bob', version: 1 });
  });

  it('redelivers permanent failures when the DLQ cannot take them (nothing is acknowledged unsaved)', async () => {
    const { handler, deadLetters, summaries } = await setup();
    deadLetters.accept = () => false;
    const event = sqsEvent([
      'not json',
      { id: 'o-1' },
      { resource: 'customers', id: 'c-9', data: { name: 'Ada', age: -3 } },
    ]);
    const response = await handler(event, lambdaContext(30_000));
    const [badJson, good, missing] = event.Records;
    expect(failedIds(response)).toEqual([badJson!.messageId, missing!.messageId].sort());
    expect(failedIds(response)).not.toContain(good!.messageId);
    expect(summaries[0]).toMatchObject({ RecordsDeadLettered: 0, RecordsFailed: 2, RecordsProcessed: 1 });
  });

  it('redelivers every permanent failure when the dead-letter sink fails as a whole', async () => {
    const { handler, deadLetters } = await setup();
    deadLetters.send = () => Promise.reject(new Error('sink down'));
    const event = sqsEvent([
      'not json',
      { id: 'o-1' },
      { resource: 'customers', id: 'c-9', data: { name: 'Ada', age: -3 } },
    ]);
    const [badJson, , missing] = event.Records;
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual([badJson!.messageId, missing!.messageId].sort());
  });
});

describe('per-record order, concurrency and priority', () => {
  it('applies writes to one record in seq order, coalesced into one read and one write', async () => {
    const { handler, store } = await setup();
    const event = sqsEvent([
      { op: 'insert', id: 'o-1', data: { step: 1, a: 1 } },
      { op: 'update', id: 'o-1', data: { step: 2, b: 2 } },
      { op: 'update', id: 'o-1', data: { step: 3, c: 3 } },
      { op: 'delete', id: 'o-1' },
      { op: 'upsert', id: 'o-1', data: { step: 5 } },
      { op: 'update', id: 'o-1', data: { tail: true } },
    ]);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    // version counts the writes applied: six.
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).toMatchObject({ step: 5, tail: true, version: 6 });
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).not.toHaveProperty('a');
    expect(store.calls.map((c) => c.kind)).toEqual(['get', 'put']);
  });

  it("a transient failure of a record's coalesced write redelivers every write to that record", async () => {
    const { handler, store } = await setup();
    await handler(sqsEvent([{ op: 'insert', id: 'o-1', data: { step: 1 } }]), lambdaContext(30_000));
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-1')) throw internalError();
    };
    const event = sqsEvent([
      { op: 'update', id: 'o-1', data: { step: 2 } },
      { op: 'update', id: 'o-1', data: { step: 3 } },
      { op: 'delete', id: 'o-1' },
      { op: 'upsert', id: 'o-2', data: { other: true } },
    ]);
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(ids(event).slice(0, 3).sort());
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).toMatchObject({ step: 1, version: 1 });
    expect(store.record(keyOf('acme', 'orders', 'o-2'))).toMatchObject({ other: true });
    expect(store.writes().filter((c) => c.key === keyOf('acme', 'orders', 'o-1')).length).toBeGreaterThan(1);
  });

  it('runs writes to different records concurrently', async () => {
    const model = new S3BehaviourModel({ latency: { medianMs: 40, p99Ms: 40 }, writesPerSecond: Infinity });
    const store = new TrackingStore({ model });
    const { handler } = await setup({ POOL_CONCURRENCY: '8' }, store);
    const event = sqsEvent(Array.from({ length: 6 }, (_, i) => ({ id: `o-${i}` })));
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.maxInFlight).toBe(6);
    expect(store.keys()).toHaveLength(6);
  });

  it('starts higher-priority writes first when the pool has one slot', async () => {
    const model = new S3BehaviourModel({ latency: { medianMs: 5, p99Ms: 5 }, writesPerSecond: Infinity });
    const store = new TrackingStore({ model });
    const { handler } = await setup({ POOL_CONCURRENCY: '1' }, store);
    const priorities = [10, 90, 50, 100, 0, 70];
    const event = sqsEvent(priorities.map((priority) => ({ id: `p-${priority}`, priority })));
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.maxInFlight).toBe(1);
    const order = store.writes().map((c) => c.key);
    const expected = [...priorities].sort((a, b) => b - a).map((p) => keyOf('acme', 'orders', `p-${p}`));
    expect(order).toEqual(expected);
  });
});

describe('redelivery', () => {
  it('handles the same batch twice: same objects, no failure, derived-id inserts count as written', async () => {
    const { handler, store, summaries, deadLetters } = await setup();
    const event = sqsEvent([
      { op: 'insert', data: { via: 'message-id' } },
      { op: 'insert', key: 'order-2024-0001', data: { via: 'key' } },
      { op: 'insert', id: 'o-explicit', data: { via: 'explicit' } },
      { op: 'upsert', id: 'o-up', data: { n: 1 } },
      { op: 'delete', id: 'o-gone' },
      { tenant: 'globex', op: 'insert', data: { via: 'other tenant' } },
    ]);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    const first = new Map(store.keys().map((k) => [k, store.record(k)]));
    // Five records and the tombstone of o-gone.
    expect(first.size).toBe(6);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(store.keys()).toEqual([...first.keys()]);
    for (const [key, record] of first) {
      const { createdAt: _c, updatedAt: _u, ...content } = record!;
      expect(store.record(key), key).toMatchObject(content);
    }
    expect(summaries.map((s) => s.RecordsProcessed)).toEqual([6, 6]);
    expect(summaries[1]).toMatchObject({ RecordsDeadLettered: 0, RecordsFailed: 0 });
    expect(deadLetters.letters.size).toBe(0);
  });

  it('dead-letters an explicit-id insert that finds different content (record-exists)', async () => {
    const { handler, store, deadLetters } = await setup();
    await handler(sqsEvent([{ op: 'insert', id: 'o-1', data: { v: 1 } }]), lambdaContext(30_000));
    const event = sqsEvent([{ op: 'insert', id: 'o-1', data: { v: 2 } }]);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(deadLetters.letters.get(event.Records[0]!.messageId)?.reason).toBe('record-exists');
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).toMatchObject({ v: 1 });
  });
});

describe('tenant Database cache', () => {
  it('keeps each tenant Database (and pool) warm across invocations and evicts the least recently used', async () => {
    // A tenant's Database declares every configured resource once, when it is opened.
    const declare = vi.spyOn(Database.prototype, 'createResource');
    const disconnect = vi.spyOn(Database.prototype, 'disconnect');
    try {
      const { handler } = await setup({ TENANT_CACHE_SIZE: '2' });
      const opened = () => [...new Set(declare.mock.contexts as Database[])];
      const batch = (...tenants: string[]) => sqsEvent(tenants.map((tenant) => ({ tenant, id: 'x' })));
      await handler(batch('a', 'b'), lambdaContext(30_000));
      expect(
        opened()
          .map((d) => d.tenant)
          .sort(),
      ).toEqual(['a', 'b']);
      const pools = new Map(opened().map((d) => [d.tenant, d.pool]));
      const enqueue = vi.spyOn(ExecutorPool.prototype, 'enqueue');
      await handler(batch('a', 'b'), lambdaContext(30_000));
      expect(opened()).toHaveLength(2); // warm: no new Database
      expect(new Set(enqueue.mock.contexts)).toEqual(new Set(pools.values())); // the same pools did the work
      enqueue.mockRestore();
      await handler(batch('a'), lambdaContext(30_000)); // a becomes the most recently used
      await handler(batch('c'), lambdaContext(30_000));
      expect(
        opened()
          .map((d) => d.tenant)
          .slice(2),
      ).toEqual(['c']);
      expect((disconnect.mock.contexts as Database[]).map((d) => d.tenant)).toEqual(['b']);
    } finally {
      declare.mockRestore();
      disconnect.mockRestore();
    }
  });

  it('writes every tenant of a batch that holds more tenants than the cache', async () => {
    const { handler, store } = await setup({ TENANT_CACHE_SIZE: '2' });
    const tenants = ['t1', 't2', 't3', 't4'];
    const event = sqsEvent(
      tenants.flatMap((tenant) => [
        { tenant, op: 'insert' as const, id: 'r', data: { n: 1 } },
        { tenant, op: 'update' as const, id: 'r', data: { n: 2 } },
      ]),
    );
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    for (const tenant of tenants) expect(store.record(keyOf(tenant, 'orders', 'r'))).toMatchObject({ n: 2 });
  });
});
