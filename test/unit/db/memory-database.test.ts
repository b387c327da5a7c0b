import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConflictError,
  CorruptRecordError,
  Database,
  DatabaseNotConnectedError,
  InvalidKeyError,
  InvalidSchemaError,
  MemoryObjectStore,
  memoryBucket,
  openDatabase,
  RecordExistsError,
  RecordNotFoundError,
  ResourceNotFoundError,
  ValidationError,
} from '../../../lib/db/index.js';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { CONTRACT_SHARD_COUNTS, withShards } from '../../support/with-shards.js';

const open: Database[] = [];

/** A Database on a fresh bucket whose resources have `shards` shards. */
async function connect(shards = 1, tenant = 'acme') {
  const bucket = `b-${randomUUID().slice(0, 8)}`;
  const db = withShards(openDatabase(`memory://${bucket}/data`, { tenant }), shards);
  open.push(db);
  return db;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.disconnect()));
});

describe.each(CONTRACT_SHARD_COUNTS)('Database on memory:// (every method), %i shard(s)', (shards) => {
  it('insert -> get round-trips with system fields, key layout and metadata', async () => {
    const db = await connect(shards);
    const orders = await db.createResource({ name: 'orders' });
    const record = await orders.insert({ total: 42, sku: 'a' }, { id: 'o-1' });
    expect(record).toMatchObject({ id: 'o-1', total: 42, sku: 'a', version: 1 });
    expect(record.createdAt).toBe(record.updatedAt);
    expect(await orders.get('o-1')).toEqual(record);
    // `o-1` is in shard 0 of 4: SHA-256("o-1") starts 5c bd cb 74, 1555942260 mod 4 = 0.
    const key = shards === 1 ? 'data/t=acme/r=orders/id=o-1.json' : 'data/t=acme/r=orders/s=0000/id=o-1.json';
    expect(orders.keyOf('o-1')).toBe(key);
    const stored = await db.store.get(key);
    expect(stored?.metadata).toEqual({ version: '1', 'updated-at': record.updatedAt });
    expect(JSON.parse(stored!.body)).toEqual(record);
    expect(db.resource('orders')).toBe(orders);
    expect(() => db.resource('nope')).toThrow(ResourceNotFoundError);
  });

  it('insert takes the id from options, then data.id, else generates one', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'things' });
    expect((await r.insert({ id: 'from-data', a: 1 })).id).toBe('from-data');
    expect((await r.insert({ id: 'ignored', a: 1 }, { id: 'from-opts' })).id).toBe('from-opts');
    expect((await r.insert({ a: 1 })).id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await r.count()).toBe(3);
  });

  it('insert is create-only: a second insert of an id rejects with RecordExistsError and changes nothing', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    const first = await r.insert({ n: 1 }, { id: 'x' });
    const err = await r.insert({ n: 2 }, { id: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordExistsError);
    expect(err).toMatchObject({ name: 'RecordExistsError', resource: 'orders', id: 'x' });
    expect(await r.get('x')).toEqual(first);
  });

  it('update merges shallowly, bumps version and updatedAt, keeps createdAt', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    const first = await r.insert({ a: 1, b: { c: 1 } }, { id: 'u' });
    const updated = await r.update('u', { b: { d: 2 }, e: 3, version: 99, createdAt: 'x' } as never);
    expect(updated).toMatchObject({
      id: 'u',
      a: 1,
      b: { d: 2 },
      e: 3,
      version: 2,
      createdAt: first.createdAt,
    });
    expect(updated.updatedAt >= first.updatedAt).toBe(true);
    expect(await r.get('u')).toEqual(updated);
    expect((await r.update('u', { a: 5 })).version).toBe(3);
  });

  it('update of a missing id rejects with RecordNotFoundError', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    await expect(r.update('missing', { a: 1 })).rejects.toBeInstanceOf(RecordNotFoundError);
  });

  it('concurrent updates from the same read: one wins, the other gets ConflictError (If-Match, 412)', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    await r.insert({ n: 0 }, { id: 'c' });
    const results = await Promise.allSettled([r.update('c', { n: 1 }), r.update('c', { n: 2 })]);
    const fulfilled = results.filter((x) => x.status === 'fulfilled');
    const rejected = results.filter((x) => x.status === 'rejected');
    expect(fulfilled).toHaveLength(1);
    expect(rejected).toHaveLength(1);
    expect((rejected[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    const winner = (fulfilled[0] as PromiseFulfilledResult<Record<string, unknown>>).value;
    expect(await r.get('c')).toMatchObject({ n: winner.n, version: 2 });
  });

  it('upsert overwrites blindly (one PUT): version and createdAt start over', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    const created = await r.upsert('u1', { a: 1 });
    expect(created).toMatchObject({ id: 'u1', a: 1, version: 1 });
    await r.update('u1', { a: 2 });
    const over = await r.upsert('u1', { b: 1 });
    expect(over).toMatchObject({ id: 'u1', b: 1, version: 1 });
    expect(over).not.toHaveProperty('a');
    expect(await r.get('u1')).toEqual(over);
  });

  it('get of a missing id rejects with RecordNotFoundError; delete is idempotent', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    await r.insert({ a: 1 }, { id: 'd' });
    await r.delete('d');
    await expect(r.get('d')).rejects.toMatchObject({ name: 'RecordNotFoundError', id: 'd' });
    await expect(r.delete('d')).resolves.toBeUndefined();
    await expect(r.delete('never')).resolves.toBeUndefined();
  });

  it('list pages in id order with a cursor absent on the last page; count matches', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'items' });
    const ids = Array.from({ length: 25 }, (_, i) => `i-${String(i).padStart(3, '0')}`);
    const results = await r.insertMany(ids.map((id) => ({ id, v: id })));
    expect(results.every((x) => x.ok)).toBe(true);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await r.list({ limit: 10, ...(cursor ? { cursor } : {}) });
      pages += 1;
      seen.push(...page.items.map((x) => x.id));
      expect(page.items.every((x) => x.v === x.id)).toBe(true);
      cursor = page.cursor;
      if (pages < 3) expect(cursor).toBeDefined();
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    expect(await r.count()).toBe(25);
    const all = await r.list({ limit: 1000 });
    expect(all.cursor).toBeUndefined();
    expect(all.items).toHaveLength(25);
  });

  it('count pages past 1,000 keys', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'many' });
    await r.insertMany(Array.from({ length: 2345 }, (_, i) => ({ id: `k${i}` })));
    expect(await r.count()).toBe(2345);
  });

  it('list skips foreign objects and resources do not see each other', async () => {
    const db = await connect(shards);
    const a = await db.createResource({ name: 'a' });
    const ab = await db.createResource({ name: 'ab' });
    await a.insert({}, { id: '1' });
    await ab.insert({}, { id: '2' });
    await db.store.put({ key: 'data/t=acme/r=a/notes.txt', body: 'x' });
    await db.store.put({ key: 'data/t=acme/r=a/id=../x.json', body: '{}' });
    expect((await a.list()).items.map((x) => x.id)).toEqual(['1']);
    expect(await a.count()).toBe(1);
    expect(await ab.count()).toBe(1);
  });

  it('a non-JSON object under a record key is a CorruptRecordError, not a crash', async () => {
    const db = await connect(shards);
    const r = await db.createResource({ name: 'orders' });
    await db.store.put({ key: r.keyOf('bad'), body: 'not json' });
    await expect(r.get('bad')).rejects.toBeInstanceOf(CorruptRecordError);
  });

  it('insertMany reports per-item outcomes without failing the batch', async () => {
    const db = await connect(shards);
    const r = await db.createResource({
      name: 'orders',
      schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    });
    await r.insert({ n: 0 }, { id: 'taken' });
    const results = await r.insertMany([
      { id: 'ok-1', n: 1 },
      { id: 'taken', n: 2 },
      { id: 'bad', n: 'x' },
      { id: '../evil', n: 3 },
      { id: 'ok-2', n: 4 },
    ] as never[]);
    expect(results.map((x) => x.ok)).toEqual([true, false, false, false, true]);
    const errors = results.flatMap((x) => (x.ok ? [] : [x.error]));
    expect(errors[0]).toBeInstanceOf(RecordExistsError);
    expect(errors[1]).toBeInstanceOf(ValidationError);
    expect(errors[2]).toBeInstanceOf(InvalidKeyError);
    expect(await r.count()).toBe(3);
    expect(db.pool?.getStats().processedCount).toBeGreaterThanOrEqual(3);
  });

  it('is usable once built; calls after disconnect reject with DatabaseNotConnectedError', async () => {
    const db = withShards(openDatabase('memory://nc-bucket'), shards);
    const r = await db.createResource({ name: 'x' });
    await r.upsert('a', {});
    expect(db.isConnected).toBe(true);
    await db.disconnect();
    expect(db.isConnected).toBe(false);
    await expect(r.get('a')).rejects.toBeInstanceOf(DatabaseNotConnectedError);
    // openDatabase built the pool, so its Database stops it.
    expect(db.pool?.isStopped).toBe(true);
  });

  it('a Database given its pool and store leaves both to their owner on disconnect', async () => {
    const store = new MemoryObjectStore({ bucket: `given-${randomUUID().slice(0, 8)}` });
    const pool = new ExecutorPool({ concurrency: 2 });
    const db = withShards(new Database({ tenant: 'acme', store, pool, prefix: '/app/' }), shards);
    expect(db.bucket).toBe(store.bucket);
    expect(db.prefix).toBe('app/');
    const r = await db.createResource({ name: 'x' });
    const write = r.upsert('a', { n: 1 });
    await db.disconnect(); // waits for the queued write
    await expect(write).resolves.toMatchObject({ id: 'a', n: 1 });
    expect(pool.isStopped).toBe(false);
    await expect(r.get('a')).rejects.toBeInstanceOf(DatabaseNotConnectedError);
    expect(r.keyOf('a')).toMatch(/^app\/t=acme\/r=x\/(s=\d{4}\/)?id=a\.json$/);
    expect(await store.get(r.keyOf('a'))).toBeDefined();
    pool.stop();
  });

  it('Databases on the same memory:// bucket share it, like an S3 bucket', async () => {
    const name = `shared-${randomUUID().slice(0, 8)}`;
    const one = withShards(openDatabase(`memory://${name}`, { tenant: 'acme' }), shards);
    const two = withShards(openDatabase(`memory://${name}`, { tenant: 'acme' }), shards);
    open.push(one, two);
    await (await one.createResource({ name: 'r' })).insert({ a: 1 }, { id: 'x' });
    expect(await (await two.createResource({ name: 'r' })).get('x')).toMatchObject({ a: 1 });
    expect(memoryBucket(name).size).toBe(1);
  });
});

describe('schemas (ajv 8)', () => {
  const schema = {
    type: 'object',
    properties: {
      email: { type: 'string', format: 'email' },
      total: { type: 'number', minimum: 0 },
      customer: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
    },
    required: ['email', 'total'],
  };

  it('names the field of a violation and writes nothing', async () => {
    const db = await connect();
    const r = await db.createResource({ name: 'orders', schema });
    const cases: Array<[unknown, string, string]> = [
      [{ total: 1 }, 'email', ''],
      [{ email: 'a@b.co', total: -1 }, 'total', '/total'],
      [{ email: 'not-an-email', total: 1 }, 'email', '/email'],
      [{ email: 'a@b.co', total: 1, customer: {} }, 'customer.name', '/customer'],
      [{ email: 'a@b.co', total: 1, customer: { name: 'x', extra: 1 } }, 'customer.extra', '/customer'],
    ];
    for (const [data, field, instancePath] of cases) {
      const err = await r.insert(data as never, { id: 'v' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({ name: 'ValidationError', field, instancePath, resource: 'orders' });
    }
    expect(await r.count()).toBe(0);
  });

  it('validates system-field-free user data, on insert, update and upsert', async () => {
    const db = await connect();
    const strict = await db.createResource({
      name: 'strict',
      schema: { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: false },
    });
    await strict.insert({ a: 1 }, { id: 's' });
    await expect(strict.update('s', { a: 'x' } as never)).rejects.toMatchObject({ field: 'a' });
    await expect(strict.upsert('s', { b: 1 } as never)).rejects.toMatchObject({ field: 'b' });
    await expect(strict.insert([] as never)).rejects.toBeInstanceOf(ValidationError);
    expect(await strict.get('s')).toMatchObject({ a: 1, version: 1 });
  });

  it('a schema that does not compile is an InvalidSchemaError at createResource', async () => {
    const db = await connect();
    await expect(
      db.createResource({ name: 'x', schema: { type: 'object', propertis: {} } }),
    ).rejects.toBeInstanceOf(InvalidSchemaError);
    await expect(
      db.createResource({ name: 'y', schema: { type: 'string', format: 'nope' } }),
    ).rejects.toBeInstanceOf(InvalidSchemaError);
  });
});
