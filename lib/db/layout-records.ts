import type { ObjectStore, StoreCallOptions } from './object-store.js';
import type { ResourceLayout } from './resource-layout.js';

// Walking every record key of one layout, for the resharding tools (copyLayout, removeOldLayout): shard by
// shard, one listing page at a time, a bounded number of calls in flight.

/** A listed record of a layout: its id and the key it was listed at. */
export interface LayoutRecord {
  readonly id: string;
  readonly key: string;
}

/** Calls in flight of a resharding tool: `asked` as a whole number >= 1; NaN (a flag that did not parse) or none: 16. */
export function toolConcurrency(asked: number | undefined): number {
  const whole = Math.floor(Number(asked ?? 16));
  // As a step, NaN ended every page's loop at once.
  return Number.isNaN(whole) ? 16 : Math.max(1, whole);
}

/** Calls `onPage` with every key under `prefix`, a listing page (up to 1,000 keys) at a time, in order. */
export async function forEachListedPage(
  store: ObjectStore,
  prefix: string,
  call: StoreCallOptions,
  onPage: (keys: readonly string[]) => Promise<void>,
): Promise<void> {
  let token: string | undefined;
  do {
    const page = await store.list(
      { prefix, maxKeys: 1000, ...(token !== undefined ? { continuationToken: token } : {}) },
      call,
    );
    await onPage(page.keys);
    token = page.continuationToken;
  } while (token !== undefined);
}

/**
 * Runs `each` on every record key of `layout` (foreign objects and keys in a shard their id does not hash to
 * are skipped), `concurrency` at once, a listing page at a time.
 */
export async function forEachLayoutRecord(
  store: ObjectStore,
  layout: ResourceLayout,
  call: StoreCallOptions,
  concurrency: number,
  each: (record: LayoutRecord) => Promise<void>,
): Promise<void> {
  for (let shard = 0; shard < layout.shards; shard++) {
    await forEachListedPage(store, layout.prefixOf(shard), call, async (keys) => {
      const records = keys.flatMap((key) => {
        const id = layout.idAt(shard, key);
        return id === undefined ? [] : [{ id, key }];
      });
      for (let i = 0; i < records.length; i += concurrency) {
        await Promise.all(records.slice(i, i + concurrency).map(each));
      }
    });
  }
}
