import type { ListObjectsInput, ListObjectsPage } from './object-store.js';

/** One listed key and the shard whose prefix it was listed under. */
export interface ShardKey {
  readonly shard: number;
  readonly key: string;
}

export interface MergedKeys {
  /** Up to `limit` keys of every shard, in the order of their text past the shard prefix. */
  readonly keys: ShardKey[];
  /** Whether any shard has keys past the last one here. */
  readonly more: boolean;
}

/** One shard's listing: the page in hand, the next key to hand out, and the token of the page after. */
interface ShardFeed {
  readonly shard: number;
  readonly prefix: string;
  keys: string[];
  next: number;
  token: string | undefined;
}

/**
 * A k-way merge of the listings of `prefixes` (all of one length, so the text past the prefix orders keys
 * alike in every shard): the first `limit` keys past `position` (the text past the prefix of the last key
 * already handed out; none for the first page). Each shard is listed from `StartAfter` its prefix plus
 * `position`, in pages of about twice its share of `limit`, and listed again whenever its page runs out
 * before the merge is done. A page costs one LIST per shard, and one more per shard whose share ran over.
 * `owns(shard, key)`: whether `key` is a record of its shard (its id hashes there); of keys with one text in
 * several shards, the one it owns is handed out first.
 */
export async function mergeShardListings(
  prefixes: readonly string[],
  limit: number,
  position: string | undefined,
  listPage: (input: ListObjectsInput) => Promise<ListObjectsPage>,
  owns: (shard: number, key: string) => boolean = () => true,
): Promise<MergedKeys> {
  const maxKeys = Math.min(1000, 2 * Math.ceil(limit / prefixes.length) + 1);
  const feeds = await Promise.all(
    prefixes.map(async (prefix, shard): Promise<ShardFeed> => {
      const page = await listPage({
        prefix,
        maxKeys,
        ...(position !== undefined ? { startAfter: `${prefix}${position}` } : {}),
      });
      return { shard, prefix, keys: page.keys, next: 0, token: page.continuationToken };
    }),
  );
  const keys: ShardKey[] = [];
  while (keys.length < limit) {
    // A shard whose page ran out is listed again until it has a key in hand or no more: a truncated page
    // may hold no key at all (the token, not the keys, says more), and a shard merged without its next key
    // would let a later key out ahead of it.
    await Promise.all(
      feeds
        .filter((feed) => feed.next >= feed.keys.length && feed.token !== undefined)
        .map(async (feed) => {
          while (feed.next >= feed.keys.length && feed.token !== undefined) {
            const page = await listPage({ prefix: feed.prefix, maxKeys, continuationToken: feed.token });
            feed.keys = page.keys;
            feed.next = 0;
            feed.token = page.continuationToken;
          }
        }),
    );
    let best: ShardFeed | undefined;
    let bestRest = '';
    for (const feed of feeds) {
      if (feed.next >= feed.keys.length) continue;
      const rest = feed.keys[feed.next]!.slice(feed.prefix.length);
      // Keys with one text in two shards are one id's: its record and a stray twin (its key in another
      // layout, left by a resharding). The record goes first: a page ending between them resumes past
      // both, which loses only the stray.
      if (
        best === undefined ||
        rest < bestRest ||
        (rest === bestRest &&
          owns(feed.shard, feed.keys[feed.next]!) &&
          !owns(best.shard, best.keys[best.next]!))
      ) {
        best = feed;
        bestRest = rest;
      }
    }
    if (best === undefined) break;
    keys.push({ shard: best.shard, key: best.keys[best.next]! });
    best.next += 1;
  }
  const more = feeds.some((feed) => feed.next < feed.keys.length || feed.token !== undefined);
  return { keys, more };
}
