import { LayoutCopiedError } from './errors.js';
import {
  dropMarkersInto,
  layoutCopyMarkerKey,
  readLayoutCopyMarker,
  writeLayoutCopyMarker,
} from './layout-copy-marker.js';
import { forEachLayoutRecord, toolConcurrency } from './layout-records.js';
import { type ObjectStore, PreconditionFailedError, type StoreCallOptions } from './object-store.js';
import type { ResourceLayout } from './resource-layout.js';
import { HIDDEN_METADATA, HIDDEN_TAGS } from './sequenced-state.js';

// Resharding offline: copies every object of a resource's layout (records, tombstones, pending partials,
// byte for byte with their metadata and lifecycle tag) to the keys another layout gives their ids. It is
// NOT safe while anything writes the resource: run it with ingestion stopped (messages wait in the queue)
// and the invocations already running ended (one function timeout after the pause),
// then declare the resource with the new shard count (docs/decisions/sharded-keys.md). Once a copy has
// completed it leaves a marker, and a later run of the same copy refuses: ingestion may have resumed on the
// new layout, and records deleted there since would come back from the old keys once their tombstones expire.
// For the same reason a copy into a layout that still holds records the source no longer has (a move rolled
// back before its old keys were removed) reports them as stale and does not complete.

export interface CopyLayoutResult {
  /** Objects written at their new key. */
  readonly copied: number;
  /** Ids whose new key already held the same bytes (a re-run), or is the old key itself. */
  readonly unchanged: number;
  /** Ids whose new key holds other content: left as they are, for someone to look at. */
  readonly conflicts: readonly string[];
  /**
   * Ids the new layout holds (at a key of its own) that the old one does not: a record deleted since an
   * earlier copy left it there (a move rolled back before its old keys were removed). Declared, the new
   * layout would serve them again; left as they are, for someone to remove.
   */
  readonly stale: readonly string[];
  /**
   * Whether every id was copied or found unchanged and nothing is stale: the completion marker
   * (`markerKey`) was written, so the copy will not run again and `removeOldLayout` may remove the old keys.
   */
  readonly completed: boolean;
  /** The S3 key of the copy's completion marker (under the tenant's prefix, outside the resource's listings). */
  readonly markerKey: string;
}

/**
 * Copies the objects of layout `from` to layout `to` in `store`, one shard listing page at a time and
 * `concurrency` objects at once (default 16). Create-only (`If-None-Match: *`): a re-run after a failure
 * copies what is missing and changes nothing else. Leaves the old keys in place (`removeOldLayout` removes
 * them). A copy that ends with no conflicts and nothing stale writes its completion marker; a run that finds the marker
 * rejects with `LayoutCopiedError` before it copies anything.
 */
export async function copyLayout(
  store: ObjectStore,
  from: ResourceLayout,
  to: ResourceLayout,
  options: StoreCallOptions & { concurrency?: number } = {},
): Promise<CopyLayoutResult> {
  const call = { ...(options.signal !== undefined ? { signal: options.signal } : {}) };
  const concurrency = toolConcurrency(options.concurrency);
  let copied = 0;
  let unchanged = 0;
  const conflicts: string[] = [];
  const markerKey = layoutCopyMarkerKey(from, to);
  const done = await readLayoutCopyMarker(store, markerKey, call);
  if (done !== undefined) throw new LayoutCopiedError(markerKey, done.completedAt || undefined);

  const copyOne = async (id: string, key: string): Promise<void> => {
    const target = to.keyOf(id);
    const object = target === key ? undefined : await store.get(key, call);
    if (object === undefined) {
      if (target === key) unchanged += 1;
      return;
    }
    const hidden = object.metadata.state === HIDDEN_METADATA.state;
    try {
      await store.put(
        {
          key: target,
          body: object.body,
          ...(object.contentType !== undefined ? { contentType: object.contentType } : {}),
          metadata: object.metadata,
          ...(hidden ? { tags: HIDDEN_TAGS } : {}),
          ifNoneMatch: '*',
        },
        call,
      );
      copied += 1;
    } catch (err) {
      if (!(err instanceof PreconditionFailedError)) throw err;
      const there = await store.get(target, call);
      if (there?.body === object.body) unchanged += 1;
      else conflicts.push(id);
    }
  };

  const copiedIds = new Set<string>();
  await forEachLayoutRecord(store, from, call, concurrency, ({ id, key }) => {
    copiedIds.add(id);
    return copyOne(id, key);
  });
  // What the new layout holds at keys of its own that the old one has no record for was deleted since an
  // earlier copy put it there: copied back, it would come back to life.
  const stale: string[] = [];
  await forEachLayoutRecord(store, to, call, concurrency, async ({ id, key }) => {
    if (!copiedIds.has(id) && from.keyOf(id) !== key) stale.push(id);
  });
  const completed = conflicts.length === 0 && stale.length === 0;
  if (completed) {
    // The copies that made the old layout current no longer say where the records live.
    await dropMarkersInto(store, from, call);
    await writeLayoutCopyMarker(
      store,
      markerKey,
      {
        fromShards: from.shards,
        toShards: to.shards,
        completedAt: new Date().toISOString(),
        copied,
        unchanged,
      },
      call,
    );
  }
  return { copied, unchanged, conflicts, stale, completed, markerKey };
}
