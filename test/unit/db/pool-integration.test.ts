import { S3ServiceException } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import {
  type BehaviourModel,
  Database,
  type ListObjectsInput,
  MemoryBucket,
  MemoryObjectStore,
  memoryBucket,
  type ObjectStore,
  openDatabase,
  type PutObjectInput,
  type StoreCallOptions,
} from '../../../lib/db/index.js';
import { ManualClock, systemClock } from '../../../lib/local/s3-behaviour/clock.js';
import {
  S3BehaviourModel,
  type S3BehaviourOptions,
} from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import {
  ConcurrencyBudget,
  ExecutorPool,
  type ExecutorPoolOptions,
  TaskTimeoutError,
} from '../../../lib/pool/index.js';

/** Records each request's key and signal; optionally fails the first N puts after applying them. */
class ProbeStore implements ObjectStore {
  readonly calls: Array<{ op: string; key: string; signal: AbortSignal | undefined }> = [];
  inFlight = 0;
  maxInFlight = 0;
  lostResponses = 0;
  constructor(readonly inner: ObjectStore) {}
  get bucket() {
    return this.inner.bucket;
  }
  async #track<T>(op: string, key: string, o: StoreCallOptions | undefined, run: () => Promise<T>) {
    this.calls.push({ op, key, signal: o?.signal });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await Promise.resolve();
      return await run();
    } finally {
      this.inFlight -= 1;
    }
  }
  put(input: PutObjectInput, o?: StoreCallOptions) {
    return this.#track('put', input.key, o, async () => {
      const out = await this.inner.put(input, o);
      if (this.lostResponses > 0) {
        this.lostResponses -= 1;
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      }
      return out;
    });
  }
  get(key: string, o?: StoreCallOptions) {
    return this.#track('get', key, o, () => this.inner.get(key, o));
  }
  head(key: string, o?: StoreCallOptions) {
    return this.#track('head', key, o, () => this.inner.head(key, o));
  }
  delete(key: string, o?: StoreCallOptions) {
    return this.#track('delete', key, o, () => this.inner.delete(key, o));
  }
  list(input: ListObjectsInput, o?: StoreCallOptions) {
    return this.#track('list', input.prefix, o, () => this.inner.list(input, o));
  }
}

async function probeDb(poolOptions: ExecutorPoolOptions = {}) {
  const store = new ProbeStore(new MemoryObjectStore({ bucket: new MemoryBucket('probe') }));
  const pool = new ExecutorPool({ concurrency: 100, ...poolOptions });
  const db = new Database({ tenant: 'acme', store, pool });
  return { db, pool, store, orders: await db.createResource({ name: 'orders' }) };
}

function isModel(value: BehaviourModel | S3BehaviourOptions): value is BehaviourModel {
  return typeof (value as Partial<BehaviourModel>).decide === 'function';
}

async function modelDb(behaviour: BehaviourModel | S3BehaviourOptions, pool: ExecutorPoolOptions = {}) {
  const model = isModel(behaviour) ? behaviour : new S3BehaviourModel(behaviour);
  const db = openDatabase(`memory://model-${Math.random().toString(36).slice(2, 10)}`, {
    tenant: 'acme',
    behaviour: model,
    pool: { retries: 0, ...pool },
  });
  return { db, model, orders: await db.createResource({ name: 'orders' }) };
}

describe('storage calls go through the Database pool', () => {
  it('one pool task per S3 request, each given the pool signal', async () => {
    const { db, store, orders } = await probeDb();
    let started = 0;
    db.pool!.on('pool:taskStarted', () => {
      started += 1;
    });
    await orders.insert({ a: 1 }, { id: 'x' });
    await orders.update('x', { a: 2 });
    await orders.list();
    await orders.count();
    await orders.upsert('y', {});
    await orders.delete('y');
    expect(store.calls.map((c) => c.op)).toEqual([
      'put',
      'get',
      'put',
      'list',
      'get',
      'list',
      'put',
      'delete',
    ]);
    expect(started).toBe(store.calls.length);
    expect(store.calls.every((c) => c.signal instanceof AbortSignal && !c.signal.aborted)).toBe(true);
    expect(db.pool!.getStats().processedCount).toBe(store.calls.length);
    await db.disconnect();
  });

  it('concurrency caps in-flight requests; live setConcurrency applies', async () => {
    const { db, store, orders } = await probeDb({ concurrency: 3 });
    await orders.insertMany(Array.from({ length: 40 }, (_, i) => ({ id: `a${i}` })));
    expect(store.maxInFlight).toBe(3);
    db.pool!.setConcurrency(7);
    store.maxInFlight = 0;
    await orders.insertMany(Array.from({ length: 40 }, (_, i) => ({ id: `b${i}` })));
    expect(store.maxInFlight).toBe(7);
    await db.disconnect();
  });

  it('per-call priority orders queued work', async () => {
    const { db, pool, store, orders } = await probeDb({ concurrency: 1 });
    await pool.pause();
    const done = Promise.all([
      orders.upsert('low', {}, { priority: 1 }),
      orders.upsert('high', {}, { priority: 10 }),
      orders.upsert('mid', {}, { priority: 5 }),
    ]);
    expect(store.calls).toEqual([]);
    pool.resume();
    await done;
    expect(store.calls.map((c) => c.key.split('id=')[1])).toEqual(['high.json', 'mid.json', 'low.json']);
    await db.disconnect();
    pool.stop();
  });

  it('a Database without a pool calls storage directly, with the caller signal', async () => {
    const store = new ProbeStore(new MemoryObjectStore({ bucket: new MemoryBucket('direct') }));
    const db = new Database({ tenant: 'acme', store });
    const orders = await db.createResource({ name: 'orders' });
    await orders.upsert('plain', {});
    const controller = new AbortController();
    await orders.upsert('signalled', {}, { signal: controller.signal });
    expect(store.calls.map((c) => [c.key.split('id=')[1], c.signal])).toEqual([
      ['plain.json', undefined],
      ['signalled.json', controller.signal],
    ]);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(orders.upsert('late', {}, { signal: controller.signal })).rejects.toBe(reason);
    expect(store.calls).toHaveLength(2);
  });

  it('Databases sharing a ConcurrencyBudget never exceed it together, each keeping its own pool', async () => {
    const budget = new ConcurrencyBudget(4);
    const bucket = new MemoryBucket('budget');
    const store = new ProbeStore(new MemoryObjectStore({ bucket }));
    const dbs = ['t1', 't2', 't3'].map(
      (tenant) => new Database({ tenant, store, pool: new ExecutorPool({ concurrency: 3, budget }) }),
    );
    expect(new Set(dbs.map((db) => db.pool)).size).toBe(3);
    await Promise.all(
      dbs.map(async (db) =>
        (await db.createResource({ name: 'r' })).insertMany(
          Array.from({ length: 30 }, (_, i) => ({ id: `${i}` })),
        ),
      ),
    );
    expect(store.maxInFlight).toBe(4);
    expect(bucket.size).toBe(90);
    await Promise.all(dbs.map((db) => db.disconnect()));
  });

  it('a retry that finds its own earlier write (response lost) succeeds instead of RecordExistsError', async () => {
    const { db, store, orders } = await probeDb({ retryDelay: 0 });
    store.lostResponses = 1;
    const record = await orders.insert({ a: 1 }, { id: 'lost' });
    expect(await orders.get('lost')).toEqual(record);
    store.lostResponses = 1;
    const updated = await orders.update('lost', { a: 2 });
    expect(updated.version).toBe(2);
    expect(db.pool!.getStats().retryCount).toBe(2);
    await expect(orders.insert({ a: 3 }, { id: 'lost' })).rejects.toMatchObject({
      name: 'RecordExistsError',
    });
    await db.disconnect();
  });
});

describe('memory:// driven by the S3 behaviour model', () => {
  it('throttling surfaces as the SDK does: S3ServiceException SlowDown, 503, server fault', async () => {
    const model = new S3BehaviourModel({ writesPerSecond: 0 });
    const { db, orders } = await modelDb(model);
    const err = await orders.insert({}, { id: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3ServiceException);
    expect(err).toMatchObject({ name: 'SlowDown', $fault: 'server', $metadata: { httpStatusCode: 503 } });
    expect(model.stats().byPrefix['t=acme/']?.throttled).toBe(1);
    await db.disconnect();
  });

  it('internal errors are 500 InternalError; resets carry code ECONNRESET', async () => {
    const a = await modelDb({ faults: { internalErrorRate: 1 } });
    await expect(a.orders.get('x')).rejects.toMatchObject({
      name: 'InternalError',
      $metadata: { httpStatusCode: 500 },
    });
    const b = await modelDb({ faults: { resetRate: 1 } });
    await expect(b.orders.get('x')).rejects.toMatchObject({ code: 'ECONNRESET' });
    await a.db.disconnect();
    await b.db.disconnect();
  });

  it('the pool retries model faults until every write lands', async () => {
    const model = new S3BehaviourModel({ faults: { internalErrorRate: 0.3, resetRate: 0.1 }, seed: 7 });
    const { db, orders } = await modelDb(model, { retries: 10, retryDelay: 0 });
    const results = await orders.insertMany(Array.from({ length: 100 }, (_, i) => ({ id: `r${i}` })));
    expect(results.every((r) => r.ok)).toBe(true);
    const { total } = model.stats();
    expect(total.internalErrors + total.resets).toBeGreaterThan(10);
    expect(db.pool!.getStats().retryCount).toBe(total.internalErrors + total.resets);
    expect(await orders.count()).toBe(100);
    await db.disconnect();
  });

  it('latency is waited on the model clock, and a caller abort cancels the wait without writing', async () => {
    const clock = new ManualClock();
    const model = new S3BehaviourModel({ clock, latency: { medianMs: 20, p99Ms: 20 } });
    const { db, orders } = await modelDb(model);
    let settled = false;
    const pending = orders.upsert('slow', { a: 1 }).then(() => {
      settled = true;
    });
    await expect.poll(() => clock.pendingSleeps).toBe(1);
    clock.advance(10);
    await Promise.resolve();
    expect(settled).toBe(false);
    clock.advance(100);
    await pending;
    const controller = new AbortController();
    const aborted = orders.upsert('never', {}, { signal: controller.signal });
    await expect.poll(() => clock.pendingSleeps).toBe(1);
    controller.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toMatchObject({ name: 'TaskAbortedError' });
    expect(clock.pendingSleeps).toBe(0);
    clock.advance(1000);
    expect([...memoryBucket(db.bucket).objects.keys()]).toEqual(['t=acme/r=orders/id=slow.json']);
    await db.disconnect();
  });

  it('a stalled request is aborted by the pool timeout: TaskTimeoutError at once, slot freed, next task runs', async () => {
    let stall = true;
    const model: BehaviourModel = {
      clock: systemClock,
      decide: () => (stall ? { outcome: 'stall', latencyMs: 600_000 } : { outcome: 'ok', latencyMs: 0 }),
    };
    const { db, orders } = await modelDb(model, { concurrency: 1, timeout: 50 });
    const pool = db.pool!;
    const started = performance.now();
    await expect(orders.upsert('s', {})).rejects.toBeInstanceOf(TaskTimeoutError);
    expect(performance.now() - started).toBeLessThan(1000);
    await pool.drain();
    expect(pool.getStats().activeCount).toBe(0);
    stall = false;
    await expect(orders.upsert('t', {})).resolves.toMatchObject({ id: 't' });
    await db.disconnect();
  });

  it('a pool paced at a write rate spaces the writes only: the reads (get, list, count) are not held back', async () => {
    const store = new ProbeStore(new MemoryObjectStore({ bucket: new MemoryBucket('paced') }));
    const pool = new ExecutorPool({ concurrency: 8, timeout: 0 });
    const db = new Database({ tenant: 'acme', store, pool });
    const orders = await db.createResource({ name: 'orders' });
    // One write per minute: the first goes at once, the next would wait a minute; reads must not.
    pool.setStartInterval(60_000);
    await orders.upsert('a', { n: 1 });
    await expect(orders.get('a')).resolves.toMatchObject({ id: 'a', n: 1 });
    await expect(orders.get('b')).rejects.toMatchObject({ name: 'RecordNotFoundError' });
    await expect(orders.list()).resolves.toMatchObject({ items: [{ id: 'a' }] });
    await expect(orders.count()).resolves.toBe(1);
    const held = orders.upsert('b', { n: 2 });
    await Promise.resolve();
    expect(store.calls.filter((c) => c.op === 'put').map((c) => c.key)).toEqual([
      expect.stringContaining('id=a.json'),
    ]);
    // Pacing off: the held write goes.
    pool.setStartInterval(0);
    await expect(held).resolves.toMatchObject({ id: 'b' });
    await db.disconnect();
    pool.stop();
  });
});
