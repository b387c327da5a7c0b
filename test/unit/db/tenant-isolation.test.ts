import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Database,
  InvalidKeyError,
  type ListObjectsInput,
  MemoryBucket,
  MemoryObjectStore,
  type ObjectStore,
  openDatabase,
  type PutObjectInput,
  type StoreCallOptions,
} from '../../../lib/db/index.js';
import { CONTRACT_SHARD_COUNTS, withShards } from '../../support/with-shards.js';

/** Wraps a store and records every key or prefix any request names. */
class RecordingStore implements ObjectStore {
  readonly touched: string[] = [];
  constructor(readonly inner: ObjectStore) {}
  get bucket() {
    return this.inner.bucket;
  }
  put(input: PutObjectInput, o?: StoreCallOptions) {
    this.touched.push(input.key);
    return this.inner.put(input, o);
  }
  get(key: string, o?: StoreCallOptions) {
    this.touched.push(key);
    return this.inner.get(key, o);
  }
  head(key: string, o?: StoreCallOptions) {
    this.touched.push(key);
    return this.inner.head(key, o);
  }
  delete(key: string, o?: StoreCallOptions) {
    this.touched.push(key);
    return this.inner.delete(key, o);
  }
  list(input: ListObjectsInput, o?: StoreCallOptions) {
    this.touched.push(input.prefix);
    return this.inner.list(input, o);
  }
}

const adversarialIds = [
  '../t=evil/x',
  '..',
  '%2e%2e',
  '%2e%2e%2ft=evil%2fx',
  'x/../../t=evil/r=orders/id=y',
  't=evil/r=orders/id=y',
  '\u002e\u002e',
  '\uff0e\uff0e', // fullwidth full stops
  '\u2024\u2024', // one-dot leaders
  'o\u2215x', // division slash
  'o\uff0fx', // fullwidth solidus
  'acme\u200b',
  '',
];

describe.each(CONTRACT_SHARD_COUNTS)('tenant isolation, %i shard(s)', (shards) => {
  async function setup() {
    const bucket = new MemoryBucket('iso');
    const store = new RecordingStore(new MemoryObjectStore({ bucket }));
    const acme = withShards(new Database({ prefix: 'p', tenant: 'acme', store }), shards);
    const evil = withShards(
      new Database({ prefix: 'p', tenant: 'evil', store: new MemoryObjectStore({ bucket }) }),
      shards,
    );
    return { bucket, store, acme, evil };
  }

  it('every request of a tenant names a key under <prefix>t=<tenant>/, across all methods', async () => {
    const { store, acme, evil } = await setup();
    const theirs = await evil.createResource({ name: 'orders' });
    await theirs.insert({ secret: 1 }, { id: 'y' });
    const orders = await acme.createResource({ name: 'orders' });
    await orders.insert({ a: 1 }, { id: 'x' });
    await orders.get('x');
    await orders.update('x', { a: 2 });
    await orders.upsert('z', { a: 3 });
    await orders.list();
    await orders.count();
    await orders.insertMany([{ id: 'm1' }, { id: 'm2' }]);
    await orders.delete('x');
    await expect(orders.get('y')).rejects.toMatchObject({ name: 'RecordNotFoundError' });
    for (const id of adversarialIds) {
      for (const call of [
        () => orders.insert({}, { id }),
        () => orders.get(id),
        () => orders.update(id, {}),
        () => orders.upsert(id, {}),
        () => orders.delete(id),
      ]) {
        const err = await call().catch((e: unknown) => e);
        expect(err, `id ${JSON.stringify(id)}`).toBeInstanceOf(InvalidKeyError);
        expect((err as InvalidKeyError).part).toBe('id');
      }
    }
    expect(store.touched.length).toBeGreaterThan(8);
    for (const key of store.touched) expect(key.startsWith('p/t=acme/')).toBe(true);
    expect((await orders.list()).items.map((r) => r.id)).toEqual(['m1', 'm2', 'z']);
    expect(await theirs.get('y')).toMatchObject({ secret: 1 });
    await acme.disconnect();
    await evil.disconnect();
  });

  it('random ids either are refused with InvalidKeyError or stay inside the tenant prefix (property)', async () => {
    const { store, acme, evil } = await setup();
    const orders = await acme.createResource({ name: 'orders' });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.string({ unit: 'grapheme', maxLength: 10 }),
          fc.stringMatching(/^[A-Za-z0-9_.:/%=-]{1,30}$/),
        ),
        async (id) => {
          try {
            await orders.upsert(id, { id });
          } catch (err) {
            expect(err).toBeInstanceOf(InvalidKeyError);
          }
        },
      ),
      { numRuns: 400 },
    );
    for (const key of store.touched) expect(key).toMatch(/^p\/t=acme\/r=orders\/(s=\d{4}\/)?id=/);
    await acme.disconnect();
    await evil.disconnect();
  });
});

describe('tenant and resource names', () => {
  it('bad tenant and resource names are refused before any request', async () => {
    for (const tenant of ['Acme', '../evil', 't=evil', 'acme/x', '']) {
      const store = new MemoryObjectStore({ bucket: 'iso' });
      expect(() => new Database({ store, tenant })).toThrow(InvalidKeyError);
      expect(() => openDatabase('memory://iso', { tenant })).toThrow(InvalidKeyError);
    }
    const db = openDatabase('memory://iso', { tenant: 'acme' });
    for (const name of ['Orders', '../x', 'r=x', 'a/b', '']) {
      await expect(db.createResource({ name })).rejects.toMatchObject({
        name: 'InvalidKeyError',
        part: 'resource',
      });
    }
    await db.disconnect();
  });
});
