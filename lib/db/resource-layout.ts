import { idFromKey, recordKeyUnder, resourcePrefix, shardPrefix, tenantPrefix } from './keys.js';
import { assertShardCount, shardLabel, shardOf } from './shard-hash.js';

/**
 * Where one resource's records live: one listing prefix (`.../r=<resource>/`) when unsharded, else one per
 * shard (`.../r=<resource>/s=<shard>/`), a record in the shard `shardOf(id, shards)` names.
 */
export class ResourceLayout {
  readonly shards: number;
  /** `.../r=<resource>/`: the listing prefix when unsharded, the shards' common prefix otherwise. */
  readonly #base: string;
  /**
   * `.../t=<tenant>/layout-copy/r=<resource>/`: where the resource's resharding copies leave their markers,
   * outside every listing prefix of the resource.
   */
  readonly copyMarkerPrefix: string;
  #prefixes: readonly string[] | undefined;

  constructor(tenant: string, resource: string, prefix: string, shards = 1) {
    assertShardCount(shards);
    this.shards = shards;
    this.#base = resourcePrefix(tenant, resource, prefix);
    this.copyMarkerPrefix = `${tenantPrefix(tenant, prefix)}layout-copy/r=${resource}/`;
    // Validates every part once, so the per-record prefixes below can be built by concatenation.
    if (shards > 1) shardPrefix(tenant, resource, shards - 1, prefix);
  }

  /** `.../r=<resource>/`: the prefix every layout of the resource shares. */
  get resourcePrefix(): string {
    return this.#base;
  }

  /**
   * The listing prefix of each shard, in shard order (one entry, the resource prefix, when unsharded). Built
   * on first use: a resource that is only written never holds its shards' prefixes.
   */
  get prefixes(): readonly string[] {
    this.#prefixes ??= Array.from({ length: this.shards }, (_, shard) => this.prefixOf(shard));
    return this.#prefixes;
  }

  /** The listing prefix of shard `shard` (the resource prefix when unsharded). */
  prefixOf(shard: number): string {
    return this.shards === 1 ? this.#base : `${this.#base}s=${shardLabel(shard)}/`;
  }

  /** The S3 key of record `id` (validated): under its shard's prefix. */
  keyOf(id: string): string {
    return recordKeyUnder(this.shards === 1 ? this.#base : this.prefixOf(shardOf(id, this.shards)), id);
  }

  /**
   * The record id of `key`, listed under shard `shard`'s prefix, or `undefined` for anything else: foreign
   * objects, and record keys in a shard their id does not hash to (`get` would never find them there).
   */
  idAt(shard: number, key: string): string | undefined {
    const id = idFromKey(this.prefixOf(shard), key);
    if (id === undefined || this.shards === 1) return id;
    return shardOf(id, this.shards) === shard ? id : undefined;
  }
}
