import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { copyLayout } from '../../../lib/db/copy-layout.js';
import { Database } from '../../../lib/db/database.js';
import { LayoutCopiedError, LayoutNotCopiedError, RecordNotFoundError } from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import type { ObjectStore } from '../../../lib/db/object-store.js';
import { removeOldLayout } from '../../../lib/db/remove-old-layout.js';
import { ResourceLayout } from '../../../lib/db/resource-layout.js';
import type { SequencedWrite } from '../../../lib/db/sequenced-state.js';
import { allListedIds } from './support/all-listed-ids.js';
import { wrap } from './support/wrapped-store.js';

// The offline resharding tools (copyLayout, removeOldLayout, their completion marker), following
// the steps of docs/decisions/sharded-keys.md ("Consequences"): stop ingestion, copyLayout(from, to),
// declare the new shard count, resume, removeOldLayout(from, to).

const upsert = (seq: number, data: Record<string, unknown>): SequencedWrite => ({
  op: 'upsert',
  stamp: { seq, tie: 'm' },
  data,
});

const layout = (shards: number) => new ResourceLayout('acme', 'orders', '', shards);

function freshStore(): MemoryObjectStore {
  return new MemoryObjectStore({ bucket: `attack-${randomUUID().slice(0, 8)}` });
}

/** The resource as ingestion sees it when declared with `shards`. */
function declared(store: ObjectStore, shards: number) {
  return new Database({ tenant: 'acme', store }).createResource({ name: 'orders', shards });
}

/** 30 records o-00..o-29, a tombstone ('gone') and a pending partial ('waiting'). */
async function seeded(shards: number, n = 30) {
  const store = freshStore();
  const orders = await declared(store, shards);
  const ids = Array.from({ length: n }, (_, i) => `o-${String(i).padStart(2, '0')}`);
  await Promise.all(ids.map((id, i) => orders.insert({ n: i }, { id })));
  await orders.applySequenced('gone', [upsert(1, { n: 1 }), { op: 'delete', stamp: { seq: 5, tie: 'm' } }]);
  await orders.applySequenced('waiting', [
    { op: 'update', stamp: { seq: 3, tie: 'm' }, data: { late: true } },
  ]);
  return { store, orders, ids };
}

/** The whole documented procedure for one move (ingestion is stopped around the copy). */
async function reshard(store: ObjectStore, from: number, to: number): Promise<void> {
  const copy = await copyLayout(store, layout(from), layout(to));
  expect(copy.completed).toBe(true);
  await removeOldLayout(store, layout(from), layout(to));
}

/** What `s3-ingest reshard` does for one tenant: LayoutCopiedError is reported as "already copied", exit 0. */
async function cliCopy(store: ObjectStore, from: number, to: number): Promise<'copied' | 'already copied'> {
  try {
    await copyLayout(store, layout(from), layout(to));
    return 'copied';
  } catch (err) {
    if (err instanceof LayoutCopiedError) return 'already copied';
    throw err;
  }
}

describe('a completion marker stands for its move only (reshard back and forth)', () => {
  // Scale up for the peak (1 -> 4), back down after it (4 -> 1), up again next peak (1 -> 4): each move
  // following the documented steps. The first move's marker is still there on the third.

  it('a second 1 -> 4 move, after 1 -> 4 and 4 -> 1 both completed and removed, copies the records', async () => {
    const { store } = await seeded(1);
    await reshard(store, 1, 4);
    await reshard(store, 4, 1);
    const one = await declared(store, 1);
    await one.insert({ n: 99 }, { id: 'new-after-rollback' });
    // The copy to 4 shards must run: the 4-shard keys were all removed by the 4 -> 1 move.
    const again = await copyLayout(store, layout(1), layout(4));
    expect(again).toMatchObject({ copied: 33, conflicts: [], completed: true });
  });

  it('removeOldLayout 1 -> 4 refuses when no copy to 4 shards happened since the layout last changed', async () => {
    const { store } = await seeded(1);
    await reshard(store, 1, 4);
    await reshard(store, 4, 1);
    // The resource now lives on 1 shard only; the 4-shard keys are gone. Nothing was copied to 4 shards
    // since, so removing the 1-shard keys "because they were copied" must be refused.
    const removal = removeOldLayout(store, layout(1), layout(4));
    await expect(removal).rejects.toBeInstanceOf(LayoutNotCopiedError);
    expect(await (await declared(store, 1)).count()).toBe(30);
  });

  it('following the CLI steps on the third move keeps every record (declared 4, --remove-old)', async () => {
    const { store, ids } = await seeded(1);
    await reshard(store, 1, 4);
    await reshard(store, 4, 1);
    // Third move, step 1: `s3-ingest reshard --from 1 --to 4` (prints "already copied", exits 0).
    await cliCopy(store, 1, 4);
    // Step 2: declare 4 shards and resume. Step 3: `--remove-old`.
    await removeOldLayout(store, layout(1), layout(4)).catch((err: unknown) => {
      if (!(err instanceof LayoutNotCopiedError)) throw err;
    });
    const four = await declared(store, 4);
    const one = await declared(store, 1);
    // Every record must still be somewhere: in the new layout, or (if the tools refused) in the old one.
    const held = (await four.count()) + (await one.count());
    expect(held).toBe(ids.length);
  });

  it('2 -> 4 -> 2 -> 4: the third move keeps the records whose shard differs between 2 and 4', async () => {
    const { store, ids } = await seeded(2);
    await reshard(store, 2, 4);
    await reshard(store, 4, 2);
    await cliCopy(store, 2, 4);
    await removeOldLayout(store, layout(2), layout(4)).catch((err: unknown) => {
      if (!(err instanceof LayoutNotCopiedError)) throw err;
    });
    const moved = ids.filter((id) => layout(2).keyOf(id) !== layout(4).keyOf(id));
    expect(moved.length).toBeGreaterThan(0);
    const four = await declared(store, 4);
    const two = await declared(store, 2);
    const lost: string[] = [];
    for (const id of ids) {
      const inFour = await four.get(id).then(
        () => true,
        () => false,
      );
      const inTwo = await two.get(id).then(
        () => true,
        () => false,
      );
      if (!inFour && !inTwo) lost.push(id);
    }
    expect(lost).toEqual([]);
  });
});

describe('a reverse copy before the old keys are removed brings no deleted record back', () => {
  it('2 -> 4, a record deleted on 4 shards, then a rollback copy 4 -> 2: the record stays deleted', async () => {
    const { store, ids } = await seeded(2);
    const from = layout(2);
    const to = layout(4);
    expect((await copyLayout(store, from, to)).completed).toBe(true);
    // Ingestion resumes on 4 shards; a record whose key moved is deleted (plain API: no tombstone).
    const four = await declared(store, 4);
    const victim = ids.find((id) => from.keyOf(id) !== to.keyOf(id))!;
    await four.delete(victim);
    await expect(four.get(victim)).rejects.toBeInstanceOf(RecordNotFoundError);
    // The operator rolls back (the old keys were kept for exactly that), copying the live layout back.
    const back = await copyLayout(store, to, from);
    // The 2-shard layout still holds the deleted record at a key of its own: stale, so the copy does not
    // complete (no marker, so no removal of the live layout's keys either).
    expect(back).toMatchObject({ completed: false, stale: [victim] });
    await expect(store.get(back.markerKey)).resolves.toBeUndefined();
  });

  it('same with a sequenced delete whose tombstone expired (lifecycle) before the rollback', async () => {
    const { store, ids } = await seeded(1);
    const from = layout(1);
    const to = layout(4);
    expect((await copyLayout(store, from, to)).completed).toBe(true);
    const four = await declared(store, 4);
    const victim = ids[7]!;
    await four.applySequenced(victim, [{ op: 'delete', stamp: { seq: 9, tie: 'm' } }]);
    await store.delete(to.keyOf(victim)); // the tombstone expires
    const back = await copyLayout(store, to, from);
    expect(back).toMatchObject({ completed: false, stale: [victim] });
  });
});

describe('the marker sits outside every listing prefix', () => {
  it('4 -> 1, old keys removed: a page holding every record is the last page (no cursor to an empty page)', async () => {
    const { store, ids } = await seeded(4);
    await reshard(store, 4, 1);
    const one = await declared(store, 1);
    expect(await one.count()).toBe(ids.length);
    // Without a marker, a page as long as the keys (30 records, a tombstone, a pending partial) is the last.
    const control = await seeded(1);
    const whole = await control.orders.list({ limit: ids.length + 2 });
    expect(whole.items).toHaveLength(ids.length);
    expect(whole.cursor).toBeUndefined();
    const page = await one.list({ limit: ids.length + 2 });
    expect(page.items).toHaveLength(ids.length);
    // The marker `.../r=orders/layout-copy/from=4/to=1.json` sorts after every `id=` key: the listing
    // sees one more key, hands out a cursor, and the next page is empty.
    expect(page.cursor).toBeUndefined();
  });
});

describe('properties that hold', () => {
  const pairs: Array<[number, number]> = [
    [1, 4],
    [4, 1],
    [4, 2],
    [2, 4],
    [3, 5],
    [2, 1],
    [5, 3],
  ];

  it.each(pairs)(
    '%i -> %i: copy, declare, remove: every record, tombstone and pending partial reads the same',
    async (n, m) => {
      const { store, orders, ids } = await seeded(n);
      const before = (await orders.list({ limit: 1000 })).items;
      const copy = await copyLayout(store, layout(n), layout(m), { concurrency: 4 });
      expect(copy).toMatchObject({ conflicts: [], completed: true });
      expect(copy.copied + copy.unchanged).toBe(ids.length + 2);
      const removed = await removeOldLayout(store, layout(n), layout(m), { concurrency: 3 });
      expect(removed.removed + removed.kept).toBe(ids.length + 2);
      expect(removed.kept).toBe(copy.unchanged);
      const after = await declared(store, m);
      expect(await after.count()).toBe(ids.length);
      expect(await allListedIds(after, 7)).toEqual(before.map((r) => r.id));
      expect((await after.list({ limit: 1000 })).items).toEqual(before);
      await expect(after.get('gone')).rejects.toBeInstanceOf(RecordNotFoundError);
      expect(await after.applySequenced('gone', [upsert(2, { n: 2 })])).toEqual([{ kind: 'stale' }]);
      expect(await after.applySequenced('waiting', [upsert(2, { n: 2 })])).toEqual([{ kind: 'applied' }]);
      expect(await after.get('waiting')).toMatchObject({ n: 2, late: true });
      // Nothing of the old layout is left but what the new layout owns.
      const old = await declared(store, n);
      const oldIds = (await old.list({ limit: 1000 })).items.map((r) => r.id);
      for (const id of oldIds) expect(layout(n).keyOf(id)).toBe(layout(m).keyOf(id));
    },
  );

  it('same layout (4 -> 4, 1 -> 1): copies nothing, removes nothing', async () => {
    for (const n of [1, 4]) {
      const { store, ids } = await seeded(n);
      const copy = await copyLayout(store, layout(n), layout(n));
      expect(copy).toMatchObject({ copied: 0, unchanged: ids.length + 2, conflicts: [], completed: true });
      expect(await removeOldLayout(store, layout(n), layout(n))).toEqual({
        removed: 0,
        kept: ids.length + 2,
      });
      expect(await (await declared(store, n)).count()).toBe(ids.length);
    }
  });

  it('2 -> 4 while ingestion runs on 4: removeOldLayout keeps records written to the new layout since', async () => {
    const { store, ids } = await seeded(2);
    expect((await copyLayout(store, layout(2), layout(4))).completed).toBe(true);
    const four = await declared(store, 4);
    const fresh = Array.from({ length: 40 }, (_, i) => `n-${i}`);
    for (const id of fresh) await four.insert({ fresh: true }, { id });
    await four.update(ids[0]!, { n: -1 } as never);
    await removeOldLayout(store, layout(2), layout(4));
    expect(await four.count()).toBe(ids.length + fresh.length);
    expect(await four.get(ids[0]!)).toMatchObject({ n: -1 });
  });

  it('4 -> 2 while ingestion runs on 2: removeOldLayout keeps records written to the new layout since', async () => {
    const { store, ids } = await seeded(4);
    expect((await copyLayout(store, layout(4), layout(2))).completed).toBe(true);
    const two = await declared(store, 2);
    const fresh = Array.from({ length: 40 }, (_, i) => `n-${i}`);
    for (const id of fresh) await two.insert({ fresh: true }, { id });
    await removeOldLayout(store, layout(4), layout(2));
    expect(await two.count()).toBe(ids.length + fresh.length);
  });

  it('more than 1000 keys a listing: 1 -> 2 -> 1 copies and removes every one', async () => {
    const store = freshStore();
    const one = await declared(store, 1);
    const ids = Array.from({ length: 2300 }, (_, i) => `k-${String(i).padStart(5, '0')}`);
    for (let i = 0; i < ids.length; i += 100)
      await Promise.all(ids.slice(i, i + 100).map((id) => one.insert({}, { id })));
    const up = await copyLayout(store, layout(1), layout(2), { concurrency: 50 });
    expect(up).toMatchObject({ copied: ids.length, conflicts: [], completed: true });
    expect(await removeOldLayout(store, layout(1), layout(2), { concurrency: 50 })).toEqual({
      removed: ids.length,
      kept: 0,
    });
    const two = await declared(store, 2);
    expect(await two.count()).toBe(ids.length);
    expect(await one.count()).toBe(0);
    const down = await copyLayout(store, layout(2), layout(1), { concurrency: 50 });
    expect(down).toMatchObject({ copied: ids.length, completed: true });
    await removeOldLayout(store, layout(2), layout(1), { concurrency: 50 });
    expect(await one.count()).toBe(ids.length);
    expect(await two.count()).toBe(0);
  });

  it('concurrency bounds the calls in flight; 0, negative, fractional and Infinity still copy everything', async () => {
    for (const concurrency of [3, 0, -2, 2.7, Number.POSITIVE_INFINITY]) {
      const { store, ids } = await seeded(1);
      let inFlight = 0;
      let peak = 0;
      const counted = wrap(store, {
        get: async (key, options) => {
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          try {
            return await store.get(key, options);
          } finally {
            inFlight -= 1;
          }
        },
      });
      const copy = await copyLayout(counted, layout(1), layout(4), { concurrency });
      expect(copy).toMatchObject({ copied: ids.length + 2, completed: true });
      if (concurrency === 3) expect(peak).toBeLessThanOrEqual(3);
      if (concurrency <= 0) expect(peak).toBe(1);
    }
  });

  it('a store error during the copy rejects and leaves no marker; the re-run completes', async () => {
    const { store, ids } = await seeded(1);
    let failures = 1;
    const flaky = wrap(store, {
      put: async (input, options) => {
        if (input.key.includes('o-17') && failures-- > 0)
          throw Object.assign(new Error('internal'), { name: 'InternalError' });
        return store.put(input, options);
      },
    });
    const first = copyLayout(flaky, layout(1), layout(4));
    await expect(first).rejects.toMatchObject({ name: 'InternalError' });
    await expect(removeOldLayout(store, layout(1), layout(4))).rejects.toBeInstanceOf(LayoutNotCopiedError);
    const again = await copyLayout(flaky, layout(1), layout(4));
    expect(again).toMatchObject({ conflicts: [], completed: true });
    expect(again.copied + again.unchanged).toBe(ids.length + 2);
  });

  it('a listing error part-way rejects and leaves no marker', async () => {
    const { store } = await seeded(4);
    const broken = wrap(store, {
      list: async (input, options) => {
        if (input.prefix.endsWith('s=0002/'))
          throw Object.assign(new Error('slow down'), { name: 'SlowDown' });
        return store.list(input, options);
      },
    });
    await expect(copyLayout(broken, layout(4), layout(1))).rejects.toMatchObject({ name: 'SlowDown' });
    const marker = await store.list({ prefix: `${layout(1).resourcePrefix}layout-copy/` });
    expect(marker.keys).toEqual([]);
  });

  it('a conflict leaves no marker, so removeOldLayout refuses and nothing is deleted', async () => {
    const { store, ids } = await seeded(2);
    const moved = ids.find((id) => layout(2).keyOf(id) !== layout(4).keyOf(id))!;
    await store.put({ key: layout(4).keyOf(moved), body: '{"other":true}' });
    const copy = await copyLayout(store, layout(2), layout(4));
    expect(copy).toMatchObject({ conflicts: [moved], completed: false });
    await expect(removeOldLayout(store, layout(2), layout(4))).rejects.toBeInstanceOf(LayoutNotCopiedError);
    expect(await (await declared(store, 2)).count()).toBe(ids.length);
  });

  it('the marker is counted and listed as no record by either layout (1 -> 4, 4 -> 1)', async () => {
    for (const [n, m] of [
      [1, 4],
      [4, 1],
    ] as const) {
      const { store, ids } = await seeded(n);
      await copyLayout(store, layout(n), layout(m));
      for (const shards of [n, m]) {
        const resource = await declared(store, shards);
        expect(await resource.count()).toBe(ids.length);
        expect((await allListedIds(resource, 1000)).sort()).toEqual([...ids].sort());
      }
    }
  });

  it('a completed copy refuses a re-run of the same pair, before touching a record', async () => {
    const { store } = await seeded(2);
    await copyLayout(store, layout(2), layout(4));
    let calls = 0;
    const watched = wrap(store, {
      put: async (input, options) => {
        calls += 1;
        return store.put(input, options);
      },
      list: async (input, options) => {
        calls += 1;
        return store.list(input, options);
      },
    });
    await expect(copyLayout(watched, layout(2), layout(4))).rejects.toBeInstanceOf(LayoutCopiedError);
    expect(calls).toBe(0);
  });
});
