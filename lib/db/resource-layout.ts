import { idFromKey, recordKeyUnder, resourcePrefix, shardPrefix } from './keys.js';
import { assertShardCount, shardOf } from './shard-hash.js';

/**
 * Where one resource's records live: one listing prefix (`.../r=<resource>/`) when unsharded, else one per
 * shard (`.../r=<resource>/s=<shard>/`), a record in the shard `shardOf(id, shards)` names.
 */
export class ResourceLayout {
  readonly shards: number;
  /** The listing prefix of each shard, in shard order (one entry, the resource prefix, when unsharded). */
  readonly prefixes: readonly string[];

  constructor(tenant: string, resource: string, prefix: string, shards = 1) {
    assertShardCount(shards);
    this.shards = shards;
    this.prefixes =
      shards === 1
        ? [resourcePrefix(tenant, resource, prefix)]
        : Array.from({ length: shards }, (_, shard) => shardPrefix(tenant, resource, shard, prefix));
  }

  /** The S3 key of record `id` (validated): under its shard's prefix. */
  keyOf(id: string): string {
    return recordKeyUnder(this.prefixes[this.shards === 1 ? 0 : shardOf(id, this.shards)]!, id);
  }

  /**
   * The record id of `key`, listed under shard `shard`'s prefix, or `undefined` for anything else: foreign
   * objects, and record keys in a shard their id does not hash to (`get` would never find them there).
   */
  idAt(shard: number, key: string): string | undefined {
    const id = idFromKey(this.prefixes[shard]!, key);
    if (id === undefined || this.shards === 1) return id;
    return shardOf(id, this.shards) === shard ? id : undefined;
  }
}
