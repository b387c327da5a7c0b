import { LayoutNotCopiedError } from './errors.js';
import { layoutCopyMarkerKey, readLayoutCopyMarker } from './layout-copy-marker.js';
import { forEachLayoutRecord, toolConcurrency } from './layout-records.js';
import type { ObjectStore, StoreCallOptions } from './object-store.js';
import type { ResourceLayout } from './resource-layout.js';

// The last step of resharding: once `copyLayout` has completed (its marker exists) and the resource is
// declared with the new shard count, the old layout's keys are dead weight that a later copy could bring
// back. An id whose key is the same in both layouts (N = 2 -> 4: half of shard 0's ids) is the new
// layout's record and stays. Safe while ingestion runs on the new layout: it never reads or writes an old
// key that is not also its own.

export interface RemoveOldLayoutResult {
  /** Old keys deleted. */
  readonly removed: number;
  /** Listed records whose key is also their key in the new layout: kept. */
  readonly kept: number;
}

/**
 * Deletes the records (objects, tombstones, pending partials) of layout `from` whose key differs from their
 * key in layout `to`, one shard listing page at a time and `concurrency` deletes at once (default 16).
 * Rejects with `LayoutNotCopiedError`, removing nothing, unless `copyLayout(store, from, to)` completed.
 * Idempotent: a re-run after a failure removes what is left.
 */
export async function removeOldLayout(
  store: ObjectStore,
  from: ResourceLayout,
  to: ResourceLayout,
  options: StoreCallOptions & { concurrency?: number } = {},
): Promise<RemoveOldLayoutResult> {
  const call = { ...(options.signal !== undefined ? { signal: options.signal } : {}) };
  const concurrency = toolConcurrency(options.concurrency);
  const markerKey = layoutCopyMarkerKey(from, to);
  if ((await readLayoutCopyMarker(store, markerKey, call)) === undefined)
    throw new LayoutNotCopiedError(markerKey);
  let removed = 0;
  let kept = 0;
  await forEachLayoutRecord(store, from, call, concurrency, async ({ id, key }) => {
    if (to.keyOf(id) === key) {
      kept += 1;
      return;
    }
    await store.delete(key, call);
    removed += 1;
  });
  return { removed, kept };
}
