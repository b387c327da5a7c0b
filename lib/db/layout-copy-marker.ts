import { forEachListedPage } from './layout-records.js';
import { type ObjectStore, PreconditionFailedError, type StoreCallOptions } from './object-store.js';
import type { ResourceLayout } from './resource-layout.js';

// The completion marker of a resharding copy: one small JSON object under the tenant's prefix, beside the
// resource's records but outside every listing prefix of it (`.../t=<tenant>/layout-copy/r=<resource>/`),
// written create-only once `copyLayout` has copied every id (no conflicts, nothing stale). It is what a
// re-run of the copy refuses on, and what `removeOldLayout` requires: both read it before touching a
// record. A marker stands for the layout its copy made current: a later copy away from that layout deletes
// it, so a move between the same two shard counts made again (N -> M, M -> N, N -> M) runs, and the
// removal after it needs its own copy.

/** What the marker holds. */
export interface LayoutCopyMarker {
  readonly fromShards: number;
  readonly toShards: number;
  /** ISO 8601. */
  readonly completedAt: string;
  readonly copied: number;
  readonly unchanged: number;
}

/** The marker's key for a copy of `from`'s resource to `to`'s shard count. */
export function layoutCopyMarkerKey(from: ResourceLayout, to: ResourceLayout): string {
  return `${to.copyMarkerPrefix}from=${from.shards}/to=${to.shards}.json`;
}

/**
 * Deletes the markers of the copies that made `layout` current (any `from=K/to=<layout.shards>`): the
 * records have been copied away from it, so those copies no longer describe where they live.
 */
export async function dropMarkersInto(
  store: ObjectStore,
  layout: ResourceLayout,
  options: StoreCallOptions,
): Promise<void> {
  await forEachListedPage(store, layout.copyMarkerPrefix, options, async (keys) => {
    for (const key of keys) if (key.endsWith(`/to=${layout.shards}.json`)) await store.delete(key, options);
  });
}

/** The marker, or `undefined` when the copy has not completed. */
export async function readLayoutCopyMarker(
  store: ObjectStore,
  key: string,
  options: StoreCallOptions,
): Promise<LayoutCopyMarker | undefined> {
  const object = await store.get(key, options);
  if (object === undefined) return undefined;
  try {
    return JSON.parse(object.body) as LayoutCopyMarker;
  } catch {
    // A marker someone rewrote by hand still marks the copy done; only its date is lost.
    return { fromShards: 0, toShards: 0, completedAt: '', copied: 0, unchanged: 0 };
  }
}

/** Writes the marker, create-only: a marker already there (a concurrent run that finished first) stands. */
export async function writeLayoutCopyMarker(
  store: ObjectStore,
  key: string,
  marker: LayoutCopyMarker,
  options: StoreCallOptions,
): Promise<void> {
  try {
    await store.put(
      { key, body: JSON.stringify(marker), contentType: 'application/json', ifNoneMatch: '*' },
      options,
    );
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
  }
}
