import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { InvalidShardCountError } from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import { shardGroupOf, shardGroupSpan } from '../../../lib/db/shard-groups.js';
import { shardOf } from '../../../lib/db/shard-hash.js';
import { wrap } from './support/wrapped-store.js';

describe('shard groups: runs of consecutive shards', () => {
  it('partition the shards into non-empty runs, and doubling the groups splits each run in two', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 300 }), (shards, wanted) => {
        const groups = Math.min(shards, wanted);
        let next = 0;
        for (let g = 0; g < groups; g++) {
          const { first, last } = shardGroupSpan(g, shards, groups);
          expect(first).toBe(next);
          expect(last).toBeGreaterThanOrEqual(first);
          for (let s = first; s <= last; s++) expect(shardGroupOf(s, shards, groups)).toBe(g);
          next = last + 1;
        }
        expect(next).toBe(shards);
        if (2 * groups <= shards) {
          for (let s = 0; s < shards; s++) {
            expect(Math.floor(shardGroupOf(s, shards, 2 * groups) / 2)).toBe(shardGroupOf(s, shards, groups));
          }
        }
      }),
    );
  });

  it.each([0, 17, 1.5])('refuses %s groups of 16 shards with InvalidShardCountError', (groups) => {
    expect(() => shardGroupOf(0, 16, groups)).toThrow(InvalidShardCountError);
    let thrown: unknown;
    try {
      shardGroupSpan(0, 16, groups);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ name: 'InvalidShardCountError', option: 'groups', value: groups });
  });

  it('grow from 1 to 16 under concurrent writes: no key changes, each group stays one key range, nothing lost', async () => {
    const shards = 16;
    const store = new MemoryObjectStore({ bucket: `groups-${randomUUID().slice(0, 8)}` });
    let groups = 1;
    const puts: Array<{ key: string; groups: number }> = [];
    const recording = wrap(store, {
      put: (input, options) => {
        puts.push({ key: input.key, groups });
        // The budget side doubles its groups every 120 writes (of 600), while six writers are mid-flight.
        if (puts.length % 120 === 0 && groups < shards) groups *= 2;
        return store.put(input, options);
      },
    });
    const events = await new Database({ tenant: 'acme', store: recording }).createResource({
      name: 'events',
      shards,
    });
    const ids = Array.from({ length: 120 }, (_, i) => `e-${i}`);
    const writer = async (w: number) => {
      for (let round = 0; round < 5; round++) {
        for (const id of ids.filter((_, i) => i % 6 === w)) {
          await events.applySequenced(id, [
            { op: 'upsert', stamp: { seq: round, tie: 'w' }, data: { round } },
          ]);
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, w) => writer(w)));

    expect(new Set(puts.map((p) => p.groups))).toEqual(new Set([1, 2, 4, 8, 16]));
    // Every record was written at the one key its id names, whatever the grouping.
    const byId = new Map(ids.map((id) => [events.keyOf(id), id]));
    for (const put of puts) expect(byId.has(put.key)).toBe(true);
    // In key order, every grouping's groups are runs: each is one contiguous key range, as an S3 partition.
    const sorted = [...byId.keys()].sort();
    for (const g of [1, 2, 4, 8, 16]) {
      const groupsInKeyOrder = sorted.map((key) => shardGroupOf(shardOf(byId.get(key)!, shards), shards, g));
      expect(groupsInKeyOrder).toEqual([...groupsInKeyOrder].sort((a, b) => a - b));
      expect(new Set(groupsInKeyOrder).size).toBe(g);
    }
    for (const id of ids) expect(await events.get(id)).toMatchObject({ round: 4 });
    expect(await events.count()).toBe(ids.length);
  });
});
