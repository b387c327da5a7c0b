import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { InvalidCursorError } from '../../../lib/db/errors.js';
import { encodeShardCursor } from '../../../lib/db/list-cursor.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import type { ListObjectsInput } from '../../../lib/db/object-store.js';
import type { Resource } from '../../../lib/db/resource.js';
import { shardOf } from '../../../lib/db/shard-hash.js';
import { wrap } from './support/wrapped-store.js';

const freshStore = () => new MemoryObjectStore({ bucket: `sharded-${randomUUID().slice(0, 8)}` });

async function resourceOn(store: MemoryObjectStore, shards: number, name = 'orders') {
  return new Database({ tenant: 'acme', store }).createResource({ name, shards });
}

/** Every page of `resource.list`, in order. */
async function allPages(resource: Resource, limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await resource.list({ limit, ...(cursor !== undefined ? { cursor } : {}) });
    pages.push(page.items.map((r) => r.id));
    cursor = page.cursor;
    if (pages.length > 10_000) throw new Error('list never ended');
  } while (cursor !== undefined);
  return pages;
}

// Ids where id order and key order differ (`a` vs `a-b`: `id=a-b.json` < `id=a.json`), digits, dots, colons.
const idArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,6}$/).filter((id) => !id.includes('..'));

describe('list over N shards: a k-way merge with pagination', () => {
  it('returns every record exactly once, in the unsharded listing order, for any ids, N and page size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(idArb, { maxLength: 60 }),
        fc.constantFrom(2, 3, 4, 7, 16),
        fc.integer({ min: 1, max: 9 }),
        async (ids, shards, limit) => {
          const store = freshStore();
          const sharded = await resourceOn(store, shards);
          const plain = await resourceOn(store, 1, 'plain');
          await Promise.all(ids.flatMap((id) => [sharded.upsert(id, { id }), plain.upsert(id, { id })]));
          const pages = await allPages(sharded, limit);
          for (const page of pages) expect(page.length).toBeLessThanOrEqual(limit);
          const expected = (await plain.list({ limit: 1000 })).items.map((r) => r.id);
          expect(pages.flat()).toEqual(expected);
          expect(new Set(pages.flat()).size).toBe(ids.length);
          expect(await sharded.count()).toBe(ids.length);
          // Only the last page may come without a cursor, and it is the only one that may be short.
          expect(pages.slice(0, -1).every((page) => page.length === limit)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('stores each record under its shard prefix and nowhere else', async () => {
    const store = freshStore();
    const orders = await resourceOn(store, 4);
    const ids = Array.from({ length: 40 }, (_, i) => `o-${i}`);
    await Promise.all(ids.map((id) => orders.insert({ n: 1 }, { id })));
    const { keys } = await store.list({ prefix: 't=acme/r=orders/' });
    const expected = ids.map((id) => `t=acme/r=orders/s=000${shardOf(id, 4)}/id=${id}.json`).sort();
    expect(keys).toEqual(expected);
    expect(new Set(ids.map((id) => shardOf(id, 4))).size).toBe(4);
  });

  it('a page costs one LIST per shard when the shards hold their share, a few more when one holds all', async () => {
    const store = freshStore();
    const lists: ListObjectsInput[] = [];
    const counted = wrap(store, {
      list: (input, options) => {
        lists.push(input);
        return store.list(input, options);
      },
    });
    const orders = await new Database({ tenant: 'acme', store: counted }).createResource({
      name: 'orders',
      shards: 4,
    });
    await Promise.all(Array.from({ length: 400 }, (_, i) => orders.upsert(`o-${i}`, {})));
    const page = await orders.list({ limit: 100 });
    expect(page.items).toHaveLength(100);
    expect(lists.length).toBeLessThanOrEqual(5);
    const skewed = await new Database({ tenant: 'acme', store: counted }).createResource({
      name: 'skewed',
      shards: 4,
    });
    // Only ids of shard 0: the other shards answer empty once, shard 0 is listed again as its pages run out.
    const ids = Array.from({ length: 2_000 }, (_, i) => `k-${i}`).filter((id) => shardOf(id, 4) === 0);
    await Promise.all(ids.slice(0, 200).map((id) => skewed.upsert(id, {})));
    lists.length = 0;
    expect((await skewed.list({ limit: 200 })).items).toHaveLength(200);
    // Pages of 2 x 200/4 + 1 = 101 keys: shard 0 is listed twice, the three others once.
    expect(lists.length).toBe(5);
  });

  it('skips foreign objects and records in a shard their id does not hash to, in list and in count', async () => {
    const store = freshStore();
    const orders = await resourceOn(store, 4);
    await orders.insert({ n: 1 }, { id: 'o-1' });
    await orders.insert({ n: 2 }, { id: 'a' });
    const misplaced = `t=acme/r=orders/s=0003/id=o-1.json`; // o-1 is in shard 0
    await store.put({ key: misplaced, body: '{"id":"o-1"}' });
    await store.put({ key: 't=acme/r=orders/s=0002/notes.txt', body: 'x' });
    await store.put({ key: 't=acme/r=orders/id=a.json', body: '{"id":"a"}' });
    expect((await orders.list()).items.map((r) => r.id)).toEqual(['a', 'o-1']);
    expect(await orders.count()).toBe(2);
  });

  it('pages past a run of foreign objects longer than a page: the cursor moves on, the listing ends', async () => {
    const store = freshStore();
    const orders = await resourceOn(store, 4);
    for (let i = 0; i < 30; i++) await store.put({ key: `t=acme/r=orders/s=0001/x-${i}.txt`, body: 'x' });
    await orders.insert({}, { id: 'z' });
    const pages = await allPages(orders, 5);
    expect(pages.flat()).toEqual(['z']);
    expect(pages.length).toBeGreaterThan(1);
  });

  it('inserts during a paged listing: ids ahead of the cursor are listed, ids behind it are not, none twice', async () => {
    const store = freshStore();
    const orders = await resourceOn(store, 4);
    await Promise.all(['b', 'd', 'f', 'h', 'j'].map((id) => orders.upsert(id, {})));
    const first = await orders.list({ limit: 2 });
    expect(first.items.map((r) => r.id)).toEqual(['b', 'd']);
    await Promise.all(['a', 'c', 'e', 'i'].map((id) => orders.upsert(id, {})));
    await orders.delete('f');
    const rest: string[] = [];
    let cursor = first.cursor;
    while (cursor !== undefined) {
      const page = await orders.list({ limit: 2, cursor });
      rest.push(...page.items.map((r) => r.id));
      cursor = page.cursor;
    }
    expect(rest).toEqual(['e', 'h', 'i', 'j']);
  });
});

describe('list cursors of a sharded resource', () => {
  it.each([
    ['garbage', 'not a cursor!', 'base64url'],
    ['empty', '', 'non-empty'],
    ['not JSON', Buffer.from('{nope').toString('base64url'), 'JSON'],
    ['another version', Buffer.from('{"v":2,"n":4,"a":"id=a.json"}').toString('base64url'), 'version 1'],
    ['another shard count', encodeShardCursor(8, 'id=a.json'), 'made for 8 shards, not 4'],
    ['no position', Buffer.from('{"v":1,"n":4}').toString('base64url'), 'no valid position'],
    ['too long', 'A'.repeat(5_000), 'non-empty string'],
  ])('refuses a cursor that is %s with InvalidCursorError, before any request', async (_, cursor, reason) => {
    const store = freshStore();
    let requests = 0;
    const counted = wrap(store, {
      list: (input, options) => {
        requests += 1;
        return store.list(input, options);
      },
    });
    const orders = await new Database({ tenant: 'acme', store: counted }).createResource({
      name: 'orders',
      shards: 4,
    });
    await expect(orders.list({ cursor })).rejects.toMatchObject({
      name: 'InvalidCursorError',
      resource: 'orders',
      message: expect.stringContaining(reason),
    });
    await expect(orders.list({ cursor })).rejects.toBeInstanceOf(InvalidCursorError);
    expect(requests).toBe(0);
  });

  it('a cursor it handed out resumes where the page ended', async () => {
    const orders = await resourceOn(freshStore(), 4);
    await Promise.all(['a', 'b', 'c'].map((id) => orders.upsert(id, {})));
    const first = await orders.list({ limit: 1 });
    expect(first.cursor).toBe(encodeShardCursor(4, 'id=a.json'));
    expect((await orders.list({ limit: 5, cursor: first.cursor })).items.map((r) => r.id)).toEqual([
      'b',
      'c',
    ]);
  });
});

describe('declaring a sharded resource', () => {
  it.each([0, 2.5, 5000, '4'])(
    'refuses shards %s with InvalidShardCountError, declaring nothing',
    async (n) => {
      const db = new Database({ tenant: 'acme', store: freshStore() });
      await expect(db.createResource({ name: 'orders', shards: n as number })).rejects.toMatchObject({
        name: 'InvalidShardCountError',
        value: n,
      });
      expect(db.resources).toEqual([]);
    },
  );

  it('applySequenced writes the record in its shard; get, list and count see it', async () => {
    const store = freshStore();
    const orders = await resourceOn(store, 16);
    const outcomes = await orders.applySequenced('o-1', [
      { op: 'upsert', stamp: { seq: 1, tie: 'a' }, data: { n: 1 } },
      { op: 'update', stamp: { seq: 2, tie: 'b' }, data: { m: 2 } },
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual(['applied', 'applied']);
    expect(orders.keyOf('o-1')).toBe('t=acme/r=orders/s=0004/id=o-1.json');
    expect(await store.get('t=acme/r=orders/s=0004/id=o-1.json')).toBeDefined();
    expect(await orders.get('o-1')).toMatchObject({ n: 1, m: 2 });
    expect((await orders.list()).items.map((r) => r.id)).toEqual(['o-1']);
    expect(await orders.count()).toBe(1);
  });
});
