import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConflictError,
  type Database,
  RecordExistsError,
  RecordNotFoundError,
  type StoredRecord,
} from '../../lib/db/index.js';
import { freshTenant, rgwClient, rgwDatabase, rgwObjectStore } from './support/rgw.js';

type Order = { total: number; note?: string; id?: string };

let client: S3Client;
const opened: Database[] = [];

beforeAll(() => {
  client = rgwClient();
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.disconnect()));
});

afterAll(() => client.destroy());

/** A Database for a fresh tenant (or `tenant`), over `over` (default: the suite's client). */
async function orders(label: string, options: { tenant?: string; over?: S3Client } = {}) {
  const db = await rgwDatabase(options.tenant ?? freshTenant(label), { client: options.over ?? client });
  opened.push(db);
  return { db, orders: await db.createResource<Order>({ name: 'orders' }) };
}

describe('Database on Ceph RGW: insert (If-None-Match: *)', () => {
  it('inserts, reads back, and refuses a second insert of the id with RecordExistsError, keeping the first', async () => {
    const { orders: o } = await orders('insert');
    const created = await o.insert({ total: 10 }, { id: 'o-1' });
    expect(created).toMatchObject({ id: 'o-1', total: 10, version: 1 });
    expect(await o.get('o-1')).toEqual(created);

    await expect(o.insert({ total: 99 }, { id: 'o-1' })).rejects.toBeInstanceOf(RecordExistsError);
    expect(await o.get('o-1')).toEqual(created);
  });

  it('20 concurrent inserts of one id through the pool: exactly one succeeds, 19 RecordExistsError', async () => {
    const { orders: o } = await orders('insert-race');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => o.insert({ total: i }, { id: 'contested' })),
    );
    const winners = outcomes.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const losers = outcomes.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(winners).toHaveLength(1);
    for (const loser of losers) expect(loser).toBeInstanceOf(RecordExistsError);
    expect(losers).toHaveLength(19);
    expect(await o.get('contested')).toEqual(winners[0]);
  });

  it('insertMany reports each item: new ids created, a taken id refused, the batch not failed', async () => {
    const { orders: o } = await orders('insert-many');
    await o.insert({ total: 1 }, { id: 'taken' });
    const results = await o.insertMany([
      { id: 'n-1', total: 1 },
      { id: 'taken', total: 2 },
      { id: 'n-2', total: 3 },
    ]);
    expect(results.map((r) => [r.id, r.ok])).toEqual([
      ['n-1', true],
      ['taken', false],
      ['n-2', true],
    ]);
    expect(results[1]).toMatchObject({ ok: false, error: { name: 'RecordExistsError' } });
    expect(await o.count()).toBe(3);
  });
});

describe('Database on Ceph RGW: update (If-Match)', () => {
  it('merges, bumps version, keeps createdAt; a missing id is RecordNotFoundError', async () => {
    const { orders: o } = await orders('update');
    const created = await o.insert({ total: 1, note: 'first' }, { id: 'u-1' });
    const updated = await o.update('u-1', { total: 2 });
    expect(updated).toMatchObject({
      id: 'u-1',
      total: 2,
      note: 'first',
      version: 2,
      createdAt: created.createdAt,
    });
    expect(await o.get('u-1')).toEqual(updated);
    await expect(o.update('nope', { total: 1 })).rejects.toBeInstanceOf(RecordNotFoundError);
  });

  it('an update whose record changed between its read and its write is a ConflictError; the newer record stays', async () => {
    const tenant = freshTenant('update-stale');
    const { orders: theirs } = await orders('', { tenant });
    // Our Database's client lets another writer in right before its conditional PUT goes out.
    const interleaving = rgwClient();
    let written: StoredRecord<Order> | undefined;
    interleaving.middlewareStack.add(
      (next) => async (args) => {
        const headers = (args.request as { headers?: Record<string, string> }).headers;
        if (headers?.['if-match'] !== undefined && written === undefined) {
          written = await theirs.update('u-2', { total: 2 });
        }
        return next(args);
      },
      { step: 'build', name: 'anotherWriterFirst' },
    );
    const { orders: ours } = await orders('', { tenant, over: interleaving });
    await theirs.insert({ total: 1 }, { id: 'u-2' });

    const err = await ours.update('u-2', { total: 3 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConflictError);
    expect(written).toMatchObject({ total: 2, version: 2 });
    expect(await ours.get('u-2')).toEqual(written);
    interleaving.destroy();
  });

  it('10 racing updates of one record: no lost update, losers end as ConflictError after the pool retried RGW 500s', async () => {
    const { orders: o } = await orders('update-race');
    await o.insert({ total: 0 }, { id: 'hot' });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => o.update('hot', { total: i + 1 })),
    );
    const won = outcomes.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const lost = outcomes.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    // RGW answers racing If-Match losers with 500 (not 412): the pool retries those, and the retry then
    // meets the winner's ETag (412). Whatever the interleaving, the caller sees success or ConflictError only.
    for (const err of lost) expect(err).toBeInstanceOf(ConflictError);
    expect(won.length).toBeGreaterThanOrEqual(1);
    // Every successful update produced its own version on top of the one it read: none was overwritten.
    const versions = won.map((r) => r.version).sort((a, b) => a - b);
    expect(new Set(versions).size).toBe(won.length);
    const final = await o.get('hot');
    expect(final.version).toBe(1 + won.length);
    expect(final).toEqual(won.find((r) => r.version === final.version) as StoredRecord<Order>);
  });
});

describe('Database on Ceph RGW: get, delete, list, count', () => {
  it('get of a missing id is RecordNotFoundError; delete is idempotent', async () => {
    const { orders: o } = await orders('delete');
    await expect(o.get('ghost')).rejects.toBeInstanceOf(RecordNotFoundError);
    await o.insert({ total: 1 }, { id: 'd-1' });
    await o.delete('d-1');
    await o.delete('d-1');
    await expect(o.get('d-1')).rejects.toBeInstanceOf(RecordNotFoundError);
  });

  it('lists records in id order page by page, skipping foreign objects and other resources and tenants', async () => {
    const { db, orders: o } = await orders('list');
    const ids = ['a', 'b', 'c', 'd', 'e'];
    await Promise.all(ids.map((id, i) => o.insert({ total: i }, { id })));
    const archive = await db.createResource<Order>({ name: 'orders-archive' });
    await archive.insert({ total: 0 }, { id: 'a' });
    const { orders: otherTenant } = await orders('list-other');
    await otherTenant.insert({ total: 0 }, { id: 'a' });
    const store = rgwObjectStore(client);
    await store.put({ key: `${o.keyOf('c')}/attachment`, body: 'not a record' });
    await store.put({ key: o.keyOf('z').replace('id=z.json', 'notes.txt'), body: 'not a record' });

    const seen: string[] = [];
    const pageSizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await o.list({ limit: 2, cursor });
      pageSizes.push(page.items.length);
      seen.push(...page.items.map((r) => r.id));
      cursor = page.cursor;
    } while (cursor !== undefined && pageSizes.length < 10);

    expect(seen).toEqual(ids);
    expect(pageSizes.every((n) => n <= 2)).toBe(true);
    expect(await o.count()).toBe(5);
    expect(await archive.count()).toBe(1);
  });
});
