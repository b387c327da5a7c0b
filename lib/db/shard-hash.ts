import { hash } from 'node:crypto';
import { InvalidShardCountError } from './errors.js';

// Which shard of a sharded resource holds record `id` (docs/decisions/sharded-keys.md). The definition is
// meant to be reimplemented by any reader, in any language, from this one sentence:
//   shard = (first 4 bytes of SHA-256(UTF-8 bytes of id), read as a big-endian unsigned 32-bit integer) mod N
// SHA-256 is in every standard library (Node crypto, Python hashlib, Go crypto/sha256, Java MessageDigest),
// has no seed or variant to get wrong, and spreads similar ids (`o-1`, `o-2`, ...) evenly; the modulo bias
// of 2^32 mod N is below 1e-6 for every N <= MAX_SHARDS.

/** The largest shard count: 4,096 prefixes x ~3,500 writes/s is far past any one resource's rate. */
export const MAX_SHARDS = 4096;
/** Width of the zero-padded shard segment (`s=0007`), so shard prefixes sort in shard order. */
export const SHARD_DIGITS = 4;

/** Whether `value` is a valid shard count: an integer in 1..`MAX_SHARDS`. */
export function isValidShardCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_SHARDS;
}

/** Throws `InvalidShardCountError` unless `value` is an integer in 1..`MAX_SHARDS`. */
export function assertShardCount(value: unknown): asserts value is number {
  if (!isValidShardCount(value)) throw new InvalidShardCountError(value, MAX_SHARDS);
}

/**
 * The shard (0..shards-1) of record `id` among `shards`: the definition above. The one-shot `hash` (a string
 * is hashed as UTF-8) to hex costs a third of a `createHash` object's CPU (docs/decisions/sharded-keys.md).
 */
export function shardOf(id: string, shards: number): number {
  if (shards === 1) return 0;
  return Number.parseInt(hash('sha256', id, 'hex').slice(0, 8), 16) % shards;
}

/** The shard's key segment value, zero-padded to `SHARD_DIGITS` (`7` -> `0007`). */
export function shardLabel(shard: number): string {
  return String(shard).padStart(SHARD_DIGITS, '0');
}
