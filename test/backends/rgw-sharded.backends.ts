import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConflictError,
  copyLayout,
  type Database,
  LayoutCopiedError,
  RecordExistsError,
  RecordNotFoundError,
  ResourceLayout,
  removeOldLayout,
  type StoredRecord,
  shardOf,
} from '../../lib/db/index.js';
import { freshTenant, rgwClient, rgwDatabase, rgwObjectStore } from './support/rgw.js';

// A sharded resource on Ceph RGW: records under their shard prefixes, `list` as a merge of the shards'
// ListObjectsV2 (StartAfter) with pagination, `count`, and insert/update races per record across shards;
// resharding offline (copyLayout, its completion marker, removeOldLayout) through S3ObjectStore.

type Event = { n: number };
const SHARDS = 4;

let client: S3Client;
const opened: Database[] = [];

beforeAll(() => {
  client = rgwClient();
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.disconnect()));
});

afterAll(() => client.destroy());

async function events(label: string) {
  const db = await rgwDatabase(freshTenant(label), { client });
  opened.push(db);
  return db.createResource<Event>({ name: 'events', shards: SHARDS });
}

describe('a sharded resource on Ceph RGW', () => {
  it('lists every record once, in key order, page by page across 4 shards; count agrees', async () => {
    const e = await events('shard-list');
    const ids = [...Array.from({ length: 45 }, (_, i) => `e-${String(i).padStart(3, '0')}`), 'a', 'a-1'];
    const results = await e.insertMany(ids.map((id, n) => ({ id, n })));
    expect(results.every((r) => r.ok)).toBe(true);
    const store = rgwObjectStore(client);
    const raw = await store.get(e.keyOf('e-001'));
    expect(e.keyOf('e-001')).toContain(`/r=events/s=000${shardOf('e-001', SHARDS)}/id=e-001.json`);
    expect(raw).toBeDefined();
    // A foreign object in a shard prefix is listed past, never read as a record.
    await store.put({ key: e.keyOf('e-010').replace('id=e-010.json', 'notes.txt'), body: 'not a record' });

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await e.list({ limit: 6, ...(cursor !== undefined ? { cursor } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(6);
      seen.push(...page.items.map((r) => r.id));
      cursor = page.cursor;
      pages += 1;
    } while (cursor !== undefined && pages < 30);

    expect(seen).toEqual([...ids].sort((x, y) => (`${x}.json` < `${y}.json` ? -1 : 1)));
    expect(new Set(seen.map((id) => shardOf(id, SHARDS))).size).toBe(SHARDS);
    expect(await e.count()).toBe(ids.length);
  });

  it('insert races per record across shards: 8 ids x 6 inserts, one winner each, the rest RecordExistsError', async () => {
    const e = await events('shard-insert-race');
    const ids = Array.from({ length: 8 }, (_, i) => `r-${i}`);
    const outcomes = await Promise.allSettled(
      ids.flatMap((id) => Array.from({ length: 6 }, (_, n) => e.insert({ n }, { id }))),
    );
    const won = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const lost = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
    expect(won.map((r) => r.id).sort()).toEqual(ids);
    for (const err of lost) expect(err).toBeInstanceOf(RecordExistsError);
    for (const record of won) expect(await e.get(record.id)).toEqual(record);
  });

  it('update races on records of different shards lose nothing: each record ends at 1 + its winners', async () => {
    const e = await events('shard-update-race');
    const ids = ['u-1', 'u-2', 'u-3', 'u-4'];
    await Promise.all(ids.map((id) => e.insert({ n: 0 }, { id })));
    const outcomes = await Promise.allSettled(
      ids.flatMap((id) => Array.from({ length: 5 }, (_, n) => e.update(id, { n: n + 1 }))),
    );
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(ConflictError);
    const won = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    for (const id of ids) {
      const mine = won.filter((r) => r.id === id);
      expect(mine.length).toBeGreaterThanOrEqual(1);
      const final = await e.get(id);
      expect(final.version).toBe(1 + mine.length);
      expect(final).toEqual(mine.find((r) => r.version === final.version) as StoredRecord<Event>);
    }
  });

  it('reshards 1 -> 4 on RGW: the copy reads the same, a second copy refuses, the old keys go and the new ones stay', async () => {
    const tenant = freshTenant('reshard');
    const db = await rgwDatabase(tenant, { client });
    opened.push(db);
    const one = await db.createResource<Event>({ name: 'events' });
    const ids = Array.from({ length: 40 }, (_, n) => `r-${n}`);
    await Promise.all(ids.map((id, n) => one.insert({ n }, { id })));
    await one.delete('r-0');
    const store = rgwObjectStore(client);
    const from = new ResourceLayout(tenant, 'events', '');
    const to = new ResourceLayout(tenant, 'events', '', SHARDS);
    expect(await copyLayout(store, from, to, { concurrency: 8 })).toMatchObject({
      copied: 39,
      conflicts: [],
      completed: true,
    });
    const four = await db.createResource<Event>({ name: 'events', shards: SHARDS });
    expect(await four.count()).toBe(39);
    await expect(four.get('r-0')).rejects.toBeInstanceOf(RecordNotFoundError);
    await expect(copyLayout(store, from, to)).rejects.toBeInstanceOf(LayoutCopiedError);
    expect(await removeOldLayout(store, from, to)).toEqual({ removed: 39, kept: 0 });
    expect(await one.count()).toBe(0);
    expect(await four.count()).toBe(39);
    expect((await four.get('r-39')).n).toBe(39);
  });
});
