import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';

// ListObjectsV2 `StartAfter` as S3 answers it: keys of the prefix strictly after the given key; a key before
// the prefix bounds nothing; a continuation token takes precedence.
describe('MemoryObjectStore.list with startAfter', () => {
  async function storeWith(keys: string[]) {
    const store = new MemoryObjectStore({ bucket: `start-after-${randomUUID().slice(0, 8)}` });
    await Promise.all(keys.map((key) => store.put({ key, body: '{}' })));
    return store;
  }

  it('lists the keys of the prefix strictly after startAfter, in pages', async () => {
    const store = await storeWith(['a/1', 'p/1', 'p/2', 'p/3', 'p/4', 'q/1']);
    expect((await store.list({ prefix: 'p/', startAfter: 'p/2' })).keys).toEqual(['p/3', 'p/4']);
    expect((await store.list({ prefix: 'p/', startAfter: 'p/15' })).keys).toEqual(['p/2', 'p/3', 'p/4']);
    expect((await store.list({ prefix: 'p/', startAfter: 'p/4' })).keys).toEqual([]);
    const first = await store.list({ prefix: 'p/', startAfter: 'p/1', maxKeys: 2 });
    expect(first.keys).toEqual(['p/2', 'p/3']);
    const next = await store.list({
      prefix: 'p/',
      startAfter: 'p/1',
      continuationToken: first.continuationToken,
    });
    expect(next).toEqual({ keys: ['p/4'], sizes: [2] });
  });

  it('a startAfter before the prefix lists the whole prefix; one past it lists nothing', async () => {
    const store = await storeWith(['a/1', 'b/1', 'p/1', 'p/2', 'q/1']);
    expect((await store.list({ prefix: 'p/', startAfter: 'a/1' })).keys).toEqual(['p/1', 'p/2']);
    expect((await store.list({ prefix: 'p/', startAfter: 'q/' })).keys).toEqual([]);
  });
});
