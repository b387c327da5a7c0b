import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { copyLayout } from '../../../lib/db/copy-layout.js';
import { Database } from '../../../lib/db/database.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import { ResourceLayout } from '../../../lib/db/resource-layout.js';
import { allListedIds } from './support/all-listed-ids.js';

// After resharding 2 -> 4 (copyLayout, old keys left in place until after ingestion resumes, as the steps
// say), an id of old shard 1 that hashes to new shard 3 has two keys with the same text past the shard
// prefix: its old one under s=0001 (a stray for the 4-shard layout) and its new one under s=0003. A page
// of the merge that ends on the stray must not make the next page start past the record.

describe('list over N shards with stray twins of records (old layout keys after resharding)', () => {
  it.each([1, 2, 3, 7])(
    'lists every record once with pages of %i, the old 2-shard keys still in place',
    async (limit) => {
      const store = new MemoryObjectStore({ bucket: `strays-${randomUUID().slice(0, 8)}` });
      const db = new Database({ tenant: 'acme', store });
      const old = await db.createResource({ name: 'orders', shards: 2 });
      const ids = Array.from({ length: 30 }, (_, i) => `o-${String(i).padStart(2, '0')}`);
      for (const id of ids) await old.insert({}, { id });
      const from = new ResourceLayout('acme', 'orders', '', 2);
      const to = new ResourceLayout('acme', 'orders', '', 4);
      // Some ids do move, so strays with a twin exist.
      expect(ids.some((id) => from.keyOf(id) !== to.keyOf(id))).toBe(true);
      expect((await copyLayout(store, from, to)).conflicts).toEqual([]);
      const orders = await new Database({ tenant: 'acme', store }).createResource({
        name: 'orders',
        shards: 4,
      });
      expect(await orders.count()).toBe(30);
      expect(await allListedIds(orders, limit)).toEqual(ids);
    },
  );

  it('lists every record once after any resharding N -> M with the old keys in place, for any page size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1, 2, 3, 4, 8),
        fc.constantFrom(2, 3, 4, 8, 16),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 40 }),
        async (from, to, limit, count) => {
          fc.pre(from !== to);
          const store = new MemoryObjectStore({ bucket: `strays-${randomUUID().slice(0, 8)}` });
          const old = await new Database({ tenant: 'acme', store }).createResource({
            name: 'orders',
            shards: from,
          });
          const ids = Array.from({ length: count }, (_, i) => `r-${String(i).padStart(3, '0')}`);
          await Promise.all(ids.map((id) => old.insert({}, { id })));
          const layouts = [
            new ResourceLayout('acme', 'orders', '', from),
            new ResourceLayout('acme', 'orders', '', to),
          ] as const;
          await copyLayout(store, ...layouts);
          const orders = await new Database({ tenant: 'acme', store }).createResource({
            name: 'orders',
            shards: to,
          });
          expect(await allListedIds(orders, limit)).toEqual(ids);
        },
      ),
      { numRuns: 60 },
    );
  });
});
