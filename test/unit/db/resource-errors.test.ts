// Resource methods when storage fails in ways other than "the condition failed": the caller sees the real
// error (never ConflictError / RecordExistsError for a throttle or a denial), a retry after a lost response
// recognises only its own write, and stored objects that are not records are CorruptRecordError.
import { S3ServiceException } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ConflictError,
  CorruptRecordError,
  Database,
  type ListObjectsInput,
  MemoryBucket,
  MemoryObjectStore,
  type ObjectStore,
  type PutObjectInput,
  RecordExistsError,
  type StoreCallOptions,
  ValidationError,
} from '../../../lib/db/index.js';
import { S3IngestError } from '../../../lib/index.js';
import { ExecutorPool } from '../../../lib/pool/index.js';

/** What one scripted PUT does: fail before writing, or write and then lose the response. */
type PutFault = { fail: () => Error } | { applyThenFail: () => Error };

/** A memory store whose next PUTs follow `putFaults` (in order); `afterList` runs once a page was listed. */
class ScriptedStore implements ObjectStore {
  readonly inner = new MemoryObjectStore({ bucket: new MemoryBucket('scripted') });
  readonly putFaults: PutFault[] = [];
  getFault: (() => Error) | undefined;
  /** When set, a GET answers only when its signal aborts (a stalled request); the signals seen are kept. */
  stallGets = false;
  readonly getSignals: (AbortSignal | undefined)[] = [];
  afterList: (() => Promise<void>) | undefined;
  readonly puts: PutObjectInput[] = [];
  get bucket() {
    return this.inner.bucket;
  }
  async put(input: PutObjectInput, o?: StoreCallOptions) {
    this.puts.push(input);
    const fault = this.putFaults.shift();
    if (fault !== undefined && 'fail' in fault) throw fault.fail();
    const out = await this.inner.put(input, o);
    if (fault !== undefined && 'applyThenFail' in fault) throw fault.applyThenFail();
    return out;
  }
  get(key: string, o?: StoreCallOptions) {
    this.getSignals.push(o?.signal);
    if (this.getFault !== undefined) return Promise.reject(this.getFault());
    if (this.stallGets) {
      return new Promise<never>((_, reject) =>
        o?.signal?.addEventListener('abort', () => reject(o.signal!.reason)),
      );
    }
    return this.inner.get(key, o);
  }
  head(key: string, o?: StoreCallOptions) {
    return this.inner.head(key, o);
  }
  delete(key: string, o?: StoreCallOptions) {
    return this.inner.delete(key, o);
  }
  async list(input: ListObjectsInput, o?: StoreCallOptions) {
    const page = await this.inner.list(input, o);
    await this.afterList?.();
    return page;
  }
}

const s3Error = (name: string, status: number) =>
  new S3ServiceException({
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message: name,
  });
const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

const open: Database[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(open.splice(0).map((db) => db.disconnect()));
});

async function scripted(retries = 2, timeout?: number) {
  const store = new ScriptedStore();
  const db = new Database({
    tenant: 'acme',
    store,
    pool: new ExecutorPool({
      concurrency: 8,
      retries,
      retryDelay: 0,
      ...(timeout === undefined ? {} : { timeout }),
    }),
  });
  open.push(db);
  return { store, db, orders: await db.createResource({ name: 'orders' }) };
}

describe('Resource writes under storage errors', () => {
  it('update: a denied PUT is that error, not ConflictError, and the record is unchanged', async () => {
    const { store, orders } = await scripted();
    const created = await orders.insert({ total: 1 }, { id: 'o1' });
    store.putFaults.push({ fail: () => s3Error('AccessDenied', 403) });
    const err = await orders.update('o1', { total: 2 }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ name: 'AccessDenied' });
    expect(await orders.get('o1')).toEqual(created);
  });

  it('update: throttled past its retries is the throttling error, not ConflictError', async () => {
    const { store, orders } = await scripted(1);
    await orders.insert({ total: 1 }, { id: 'o1' });
    store.putFaults.push({ fail: () => s3Error('SlowDown', 503) }, { fail: () => s3Error('SlowDown', 503) });
    await expect(orders.update('o1', { total: 2 })).rejects.toMatchObject({ name: 'SlowDown' });
  });

  it('insert: a denied PUT is that error, not RecordExistsError', async () => {
    const { store, orders } = await scripted();
    store.putFaults.push({ fail: () => s3Error('AccessDenied', 403) });
    const err = await orders.insert({ total: 1 }, { id: 'o1' }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(RecordExistsError);
    expect(err).toMatchObject({ name: 'AccessDenied' });
  });

  it('update: a concurrent change between the read and the write is ConflictError carrying the etag read', async () => {
    const { store, orders } = await scripted();
    await orders.insert({ total: 1 }, { id: 'o1' });
    const read = await store.inner.get('t=acme/r=orders/id=o1.json');
    // Another writer lands after update's read: the If-Match PUT fails.
    const original = store.put.bind(store);
    let raced = false;
    store.put = async (input, o) => {
      if (!raced && input.ifMatch !== undefined) {
        raced = true;
        await store.inner.put({ key: input.key, body: '{"id":"o1","version":9}' });
      }
      return original(input, o);
    };
    const err = await orders.update('o1', { total: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ name: 'ConflictError', expectedEtag: read!.etag });
    expect((err as ConflictError).cause).toMatchObject({
      name: 'PreconditionFailedError',
      condition: 'if-match',
    });
  });

  it('a retried insert whose first response was lost finds its own write and succeeds; a stranger’s write is RecordExistsError', async () => {
    const { store, orders } = await scripted();
    store.putFaults.push({ applyThenFail: reset });
    const record = await orders.insert({ total: 1 }, { id: 'mine' });
    expect(await orders.get('mine')).toEqual(record);

    // The lost first attempt's key is taken by someone else before the retry reads it.
    store.putFaults.push({ fail: reset });
    await store.inner.put({ key: 't=acme/r=orders/id=theirs.json', body: '{"id":"theirs","version":1}' });
    const err = await orders.insert({ total: 1 }, { id: 'theirs' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordExistsError);
    expect((err as RecordExistsError).cause).toMatchObject({
      name: 'PreconditionFailedError',
      condition: 'if-none-match',
    });
  });

  it('the follow-up read of a retried write runs under the attempt signal: a stalled read ends with the attempt', async () => {
    const { store, db, orders } = await scripted(1, 100);
    store.putFaults.push({ fail: reset });
    await store.inner.put({ key: 't=acme/r=orders/id=slow.json', body: '{"id":"slow","version":1}' });
    store.stallGets = true;
    await expect(orders.insert({ total: 1 }, { id: 'slow' })).rejects.toMatchObject({
      name: 'TaskTimeoutError',
    });
    expect(store.getSignals).toHaveLength(1);
    await vi.waitFor(() => expect(store.getSignals[0]?.aborted).toBe(true));
    await db.pool!.drain();
  });

  it('a retried write whose key vanished before the follow-up read fails with a typed error, not a TypeError', async () => {
    const { store, orders } = await scripted();
    store.putFaults.push({ fail: reset });
    await store.inner.put({ key: 't=acme/r=orders/id=gone.json', body: '{"id":"gone","version":1}' });
    const originalPut = store.put.bind(store);
    store.put = async (input, o) => {
      try {
        return await originalPut(input, o);
      } catch (err) {
        if ((err as Error).name === 'PreconditionFailedError') await store.inner.delete(input.key);
        throw err;
      }
    };
    const err = await orders.insert({ total: 1 }, { id: 'gone' }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(TypeError);
    expect(err).toBeInstanceOf(S3IngestError);
  });

  it('a retried update whose first response was lost succeeds once (one version bump)', async () => {
    const { store, orders } = await scripted();
    await orders.insert({ total: 1 }, { id: 'o1' });
    store.putFaults.push({ applyThenFail: reset });
    const updated = await orders.update('o1', { total: 2 });
    expect(updated).toMatchObject({ total: 2, version: 2 });
    expect(await orders.get('o1')).toEqual(updated);
  });

  it('a second insert of an identical record (not a retry) is still RecordExistsError', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    const { orders } = await scripted();
    await orders.insert({ total: 1 }, { id: 'same' });
    await expect(orders.insert({ total: 1 }, { id: 'same' })).rejects.toBeInstanceOf(RecordExistsError);
  });

  it('two identical updates from the same read (not retries): the second is ConflictError, even with the same bytes', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    const { orders } = await scripted();
    await orders.insert({ total: 1 }, { id: 'twin' });
    const results = await Promise.allSettled([
      orders.update('twin', { total: 2 }),
      orders.update('twin', { total: 2 }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(ConflictError);
  });

  it('writes carry the record version and update time as metadata, and upsert/update bodies are the record', async () => {
    const { store, orders } = await scripted();
    const first = await orders.upsert('u1', { a: 1 });
    const second = await orders.update('u1', { b: 2 });
    const [upsertPut, updatePut] = store.puts;
    expect(upsertPut).toMatchObject({
      contentType: 'application/json',
      metadata: { version: '1', 'updated-at': first.updatedAt },
    });
    expect(upsertPut!.ifNoneMatch).toBeUndefined();
    expect(upsertPut!.ifMatch).toBeUndefined();
    expect(updatePut).toMatchObject({ metadata: { version: '2', 'updated-at': second.updatedAt } });
    expect(JSON.parse(updatePut!.body)).toEqual(second);
    expect(second).toMatchObject({ a: 1, b: 2, createdAt: first.createdAt });
  });
});

describe('Resource reads', () => {
  it('objects under record keys that are not records are CorruptRecordError', async () => {
    const { store, orders } = await scripted();
    for (const [id, body] of [
      ['array', '[]'],
      ['null', 'null'],
      ['numeric-id', '{"id":1,"version":1}'],
      ['no-version', '{"id":"no-version"}'],
      ['string-version', '{"id":"string-version","version":"1"}'],
      ['not-json', '{'],
    ] as const) {
      await store.inner.put({ key: `t=acme/r=orders/id=${id}.json`, body });
      await expect(orders.get(id)).rejects.toBeInstanceOf(CorruptRecordError);
    }
    const err = await orders.get('not-json').catch((e: unknown) => e);
    expect((err as CorruptRecordError).cause).toBeInstanceOf(SyntaxError);
  });

  it('list leaves out records deleted between the listing and their read, and fails on any other read error', async () => {
    const { store, orders } = await scripted();
    for (const id of ['a', 'b', 'c']) await orders.insert({ n: id }, { id });
    store.afterList = () => orders.delete('b');
    const page = await orders.list();
    expect(page.items.map((r) => r.id)).toEqual(['a', 'c']);
    expect(page.cursor).toBeUndefined();
    store.afterList = undefined;
    store.getFault = () => s3Error('AccessDenied', 403);
    await expect(orders.list()).rejects.toMatchObject({ name: 'AccessDenied' });
  });

  it('list page sizes are clamped to 1.. and rounded down; the cursor walks the rest', async () => {
    const { orders } = await scripted();
    for (const id of ['a', 'b', 'c']) await orders.insert({}, { id });
    const one = await orders.list({ limit: 0 });
    expect(one.items.map((r) => r.id)).toEqual(['a']);
    const two = await orders.list({ limit: 2.7, cursor: one.cursor! });
    expect(two.items.map((r) => r.id)).toEqual(['b', 'c']);
    expect(Object.keys(two)).toEqual(['items']); // absent on the last page, not present as undefined
    expect((await orders.list({ limit: -5 })).items).toHaveLength(1);
  });
});

describe('Resource inputs', () => {
  it('accepts null-prototype objects and refuses arrays, class instances and non-objects', async () => {
    const { orders } = await scripted();
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { id: 'bare', total: 3 });
    expect(await orders.insert(bare)).toMatchObject({ id: 'bare', total: 3 });
    const notAnObject = {
      name: 'ValidationError',
      field: '',
      instancePath: '',
      issues: [{ instancePath: '', field: '', message: 'must be an object' }],
    };
    for (const bad of [[1], new Date(), 'text', 5, null, undefined]) {
      const inserted = await orders.insert(bad as never, { id: 'bad' }).catch((e: unknown) => e);
      expect(inserted).toBeInstanceOf(ValidationError);
      expect(inserted).toMatchObject(notAnObject);
      expect((inserted as Error).message).toBe('orders: record must be an object');
      const updated = await orders.update('bare', bad as never).catch((e: unknown) => e);
      expect(updated).toMatchObject(notAnObject);
    }
  });

  it('a non-string data.id is not an id: a fresh one is generated, and insertMany reports no id for it', async () => {
    const { store, orders } = await scripted();
    const record = await orders.insert({ id: 42, n: 1 } as never);
    expect(record.id).toMatch(/^[0-9a-f-]{36}$/);
    store.putFaults.push(
      { fail: () => s3Error('AccessDenied', 403) },
      { fail: () => s3Error('AccessDenied', 403) },
    );
    const results = await orders.insertMany([{ id: 7 } as never, { id: 'named' }]);
    expect(results.map((r) => [r.ok, r.id])).toEqual([
      [false, undefined],
      [false, 'named'],
    ]);
  });

  it('update ignores system fields in the patch and keeps the stored ones', async () => {
    const { orders } = await scripted();
    const created = await orders.insert({ total: 1 }, { id: 'o1' });
    const updated = await orders.update('o1', {
      total: 2,
      id: 'other',
      version: 99,
      createdAt: 'then',
    } as never);
    expect(updated).toMatchObject({ id: 'o1', version: 2, createdAt: created.createdAt, total: 2 });
  });
});
