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
    let token: string | undefined;
    do {
      const page = await store.list(
        {
          prefix: layout.prefixOf(shard),
          maxKeys: 1000,
          ...(token !== undefined ? { continuationToken: token } : {}),
        },
        call,
      );
      const records = page.keys.flatMap((key) => {
        const id = layout.idAt(shard, key);
        return id === undefined ? [] : [{ id, key }];
      });
      for (let i = 0; i < records.length; i += concurrency) {
        await Promise.all(records.slice(i, i + concurrency).map(each));
      }
      token = page.continuationToken;
    } while (token !== undefined);
  }
}
