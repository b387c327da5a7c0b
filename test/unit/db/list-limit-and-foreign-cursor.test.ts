import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { encodeShardCursor } from '../../../lib/db/list-cursor.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';

// Inputs of `list` a caller can hand in by mistake, which must never read as "this resource is empty".

const freshStore = () => new MemoryObjectStore({ bucket: `list-input-${randomUUID().slice(0, 8)}` });

describe('a list limit that is not a number', () => {
  it('a NaN limit (`Number(query.limit)` of an absent parameter) over 4 shards takes the default, as over 1', async () => {
    const orders = await new Database({ tenant: 'acme', store: freshStore() }).createResource({
      name: 'orders',
      shards: 4,
    });
    for (const id of ['a', 'b', 'c']) await orders.upsert(id, {});
    // Over 4 shards the merge compared `keys.length < NaN`: no key, `more` true and no last key, so the
    // page came back empty and without a cursor: "no records" for a resource that has three.
    expect((await orders.list({ limit: Number.NaN })).items.map((r) => r.id)).toEqual(['a', 'b', 'c']);
  });
});

describe('a sharded cursor handed to the unsharded layout', () => {
  it('a 1-shard resource refuses a cursor of the 4-shard layout with InvalidCursorError (after resharding 4 -> 1)', async () => {
    const store = freshStore();
    const orders = await new Database({ tenant: 'acme', store }).createResource({ name: 'orders' });
    for (const id of ['a', 'b', 'c']) await orders.upsert(id, {});
    await expect(orders.list({ cursor: encodeShardCursor(4, 'id=a.json') })).rejects.toMatchObject({
      name: 'InvalidCursorError',
    });
  });
});
