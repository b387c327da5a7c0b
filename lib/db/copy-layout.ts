import { type ObjectStore, PreconditionFailedError, type StoreCallOptions } from './object-store.js';
import type { ResourceLayout } from './resource-layout.js';
import { HIDDEN_METADATA, HIDDEN_TAGS } from './sequenced-state.js';

// Resharding offline: copies every object of a resource's layout (records, tombstones, pending partials,
// byte for byte with their metadata and lifecycle tag) to the keys another layout gives their ids. It is
// NOT safe while anything writes the resource: run it with ingestion stopped (messages wait in the queue)
// and the invocations already running ended (one function timeout after the pause),
// then declare the resource with the new shard count (docs/decisions/sharded-keys.md).

export interface CopyLayoutResult {
  /** Objects written at their new key. */
  readonly copied: number;
  /** Ids whose new key already held the same bytes (a re-run), or is the old key itself. */
  readonly unchanged: number;
  /** Ids whose new key holds other content: left as they are, for someone to look at. */
  readonly conflicts: readonly string[];
}

/**
 * Copies the objects of layout `from` to layout `to` in `store`, one shard listing page at a time and
 * `concurrency` objects at once (default 16). Create-only (`If-None-Match: *`): a re-run after a failure
 * copies what is missing and changes nothing else. Leaves the old keys in place.
 */
export async function copyLayout(
  store: ObjectStore,
  from: ResourceLayout,
  to: ResourceLayout,
  options: StoreCallOptions & { concurrency?: number } = {},
): Promise<CopyLayoutResult> {
  const call = { ...(options.signal !== undefined ? { signal: options.signal } : {}) };
  // NaN (a flag that did not parse) takes the default: as a step it ended every page's loop at once.
  const asked = Math.floor(Number(options.concurrency ?? 16));
  const concurrency = Number.isNaN(asked) ? 16 : Math.max(1, asked);
  let copied = 0;
  let unchanged = 0;
  const conflicts: string[] = [];

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

  for (let shard = 0; shard < from.shards; shard++) {
    let token: string | undefined;
    do {
      const page = await store.list(
        {
          prefix: from.prefixOf(shard),
          maxKeys: 1000,
          ...(token !== undefined ? { continuationToken: token } : {}),
        },
        call,
      );
      const records = page.keys.flatMap((key) => {
        const id = from.idAt(shard, key);
        return id === undefined ? [] : [{ id, key }];
      });
      for (let i = 0; i < records.length; i += concurrency) {
        await Promise.all(records.slice(i, i + concurrency).map(({ id, key }) => copyOne(id, key)));
      }
      token = page.continuationToken;
    } while (token !== undefined);
  }
  return { copied, unchanged, conflicts };
}
