import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { copyLayout } from '../../../lib/db/copy-layout.js';
import { Database } from '../../../lib/db/database.js';
import { LayoutCopiedError, LayoutNotCopiedError, RecordNotFoundError } from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import { removeOldLayout } from '../../../lib/db/remove-old-layout.js';
import { ResourceLayout } from '../../../lib/db/resource-layout.js';
import type { SequencedWrite } from '../../../lib/db/sequenced-state.js';

const upsert = (seq: number, data: Record<string, unknown>): SequencedWrite => ({
  op: 'upsert',
  stamp: { seq, tie: 'm' },
  data,
});

async function seeded(shards: number) {
  const store = new MemoryObjectStore({ bucket: `copy-${randomUUID().slice(0, 8)}` });
  const orders = await new Database({ tenant: 'acme', store }).createResource({ name: 'orders', shards });
  await Promise.all(Array.from({ length: 30 }, (_, i) => orders.insert({ n: i }, { id: `o-${i}` })));
  await orders.applySequenced('gone', [upsert(1, { n: 1 }), { op: 'delete', stamp: { seq: 5, tie: 'm' } }]);
  await orders.applySequenced('waiting', [
    { op: 'update', stamp: { seq: 3, tie: 'm' }, data: { late: true } },
  ]);
  return { store, orders };
}

describe('copyLayout: resharding a resource offline', () => {
  it('1 -> 4 shards: the 4-shard resource reads, lists and counts the same, tombstones and pending partials included', async () => {
    const { store, orders } = await seeded(1);
    const before = (await orders.list({ limit: 1000 })).items;
    const result = await copyLayout(
      store,
      new ResourceLayout('acme', 'orders', ''),
      new ResourceLayout('acme', 'orders', '', 4),
    );
    expect(result).toMatchObject({ copied: 32, unchanged: 0, conflicts: [], completed: true });

    const sharded = await new Database({ tenant: 'acme', store }).createResource({
      name: 'orders',
      shards: 4,
    });
    expect((await sharded.list({ limit: 1000 })).items).toEqual(before);
    expect(await sharded.count()).toBe(30);
    await expect(sharded.get('gone')).rejects.toBeInstanceOf(RecordNotFoundError);
    // The copied tombstone still makes an older upsert stale; the pending update lands on its older upsert.
    expect(await sharded.applySequenced('gone', [upsert(2, { n: 2 })])).toEqual([{ kind: 'stale' }]);
    expect(await sharded.applySequenced('waiting', [upsert(2, { n: 2 })])).toEqual([{ kind: 'applied' }]);
    expect(await sharded.get('waiting')).toMatchObject({ n: 2, late: true });
    expect(store.objects.objects.get(sharded.keyOf('gone'))?.tags).toEqual({ 's3-ingest-state': 'hidden' });
    // The old keys stay until someone removes them; the 1-shard resource still reads them.
    expect(await orders.count()).toBe(30);
  });

  it('a re-run copies nothing; keys shared by both layouts and content already at a new key are left alone', async () => {
    const { store } = await seeded(2);
    const from = new ResourceLayout('acme', 'orders', '', 2);
    const to = new ResourceLayout('acme', 'orders', '', 4);
    // An id whose new key already holds something else is reported, not overwritten.
    const taken = Array.from({ length: 30 }, (_, i) => `o-${i}`).find(
      (id) => from.keyOf(id) !== to.keyOf(id),
    )!;
    await store.put({ key: to.keyOf(taken), body: '{"other":true}' });
    const first = await copyLayout(store, from, to, { concurrency: 3 });
    const shared = Array.from({ length: 30 }, (_, i) => `o-${i}`).filter(
      (id) => from.keyOf(id) === to.keyOf(id),
    );
    expect(shared.length).toBeGreaterThan(0);
    expect(first.conflicts).toEqual([taken]);
    expect(first.copied + first.unchanged + 1).toBe(32);
    expect((await store.get(to.keyOf(taken)))?.body).toBe('{"other":true}');
    const again = await copyLayout(store, from, to);
    // A copy with a conflict is not complete: no marker, so it may run again once the conflict is resolved.
    expect(first.completed).toBe(false);
    expect(await store.get(first.markerKey)).toBeUndefined();
    expect(again).toMatchObject({ copied: 0, unchanged: 31, conflicts: [taken], completed: false });
  });

  it('a concurrency that is not a number (NaN from a parsed flag) copies everything, never nothing', async () => {
    const { store } = await seeded(1);
    const result = await copyLayout(
      store,
      new ResourceLayout('acme', 'orders', '', 1),
      new ResourceLayout('acme', 'orders', '', 4),
      { concurrency: Number.NaN },
    );
    // 30 records, a tombstone and a pending partial: with NaN the page loop stepped by NaN and copied none,
    // reporting { copied: 0, unchanged: 0, conflicts: [] }, a copy that looks done.
    expect(result).toMatchObject({ copied: 32, unchanged: 0, conflicts: [] });
  });

  it('a run of a copy that completed refuses: a record deleted in the new layout since, its tombstone expired, stays deleted', async () => {
    const { store } = await seeded(1);
    const from = new ResourceLayout('acme', 'orders', '');
    const to = new ResourceLayout('acme', 'orders', '', 4);
    const first = await copyLayout(store, from, to);
    expect(first.completed).toBe(true);
    // Ingestion resumes on 4 shards and deletes a record; later its tombstone expires (lifecycle).
    const sharded = await new Database({ tenant: 'acme', store }).createResource({
      name: 'orders',
      shards: 4,
    });
    await sharded.applySequenced('o-7', [{ op: 'delete', stamp: { seq: 9, tie: 'm' } }]);
    await store.delete(to.keyOf('o-7'));
    // Someone runs the copy again (a script re-run, a retry of a step that had succeeded).
    const again = copyLayout(store, from, to);
    await expect(again).rejects.toBeInstanceOf(LayoutCopiedError);
    await expect(again).rejects.toMatchObject({ name: 'LayoutCopiedError', markerKey: first.markerKey });
    await expect(sharded.get('o-7')).rejects.toBeInstanceOf(RecordNotFoundError);
    // The marker is no record: the new layout lists and counts its records only.
    expect(await sharded.count()).toBe(29);
    expect((await sharded.list({ limit: 1000 })).items).toHaveLength(29);
  });
});

describe('removeOldLayout: the last step of resharding', () => {
  it('refuses before the copy completed, and removes nothing', async () => {
    const { store, orders } = await seeded(1);
    const from = new ResourceLayout('acme', 'orders', '');
    const to = new ResourceLayout('acme', 'orders', '', 4);
    const removal = removeOldLayout(store, from, to);
    await expect(removal).rejects.toBeInstanceOf(LayoutNotCopiedError);
    await expect(removal).rejects.toMatchObject({ name: 'LayoutNotCopiedError' });
    expect(await orders.count()).toBe(30);
  });

  it("2 -> 4 shards: removes the old keys, keeps those that are the new layout's own, and the new layout reads every record", async () => {
    const { store } = await seeded(2);
    const from = new ResourceLayout('acme', 'orders', '', 2);
    const to = new ResourceLayout('acme', 'orders', '', 4);
    const ids = [...Array.from({ length: 30 }, (_, i) => `o-${i}`), 'gone', 'waiting'];
    const shared = ids.filter((id) => from.keyOf(id) === to.keyOf(id));
    expect(shared.length).toBeGreaterThan(0);
    expect((await copyLayout(store, from, to)).completed).toBe(true);
    expect(await removeOldLayout(store, from, to, { concurrency: 5 })).toEqual({
      removed: ids.length - shared.length,
      kept: shared.length,
    });
    for (const id of ids) {
      if (!shared.includes(id)) expect(await store.head(from.keyOf(id))).toBeUndefined();
      expect(await store.head(to.keyOf(id))).toBeDefined();
    }
    const sharded = await new Database({ tenant: 'acme', store }).createResource({
      name: 'orders',
      shards: 4,
    });
    expect(await sharded.count()).toBe(30);
    await expect(sharded.get('gone')).rejects.toBeInstanceOf(RecordNotFoundError);
    // Idempotent: nothing left to remove.
    expect(await removeOldLayout(store, from, to)).toEqual({ removed: 0, kept: shared.length });
  });
});
