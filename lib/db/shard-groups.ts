import { InvalidShardCountError } from './errors.js';

// Shard groups: the unit a rate budget can follow while S3 splits a sharded resource's key range. A group is
// a run of consecutive shards, so its keys are one contiguous key range (shard prefixes sort in shard
// order), the shape of an S3 partition. Doubling the group count splits every group in two
// (group g of G becomes 2g and 2g + 1 of 2G): the number of budgeted units grows from 1 to `shards`
// while no record's key changes (docs/decisions/sharded-keys.md).

/** The shards `first..last` (inclusive) of one group. */
export interface ShardSpan {
  readonly first: number;
  readonly last: number;
}

function assertGroups(groups: number, shards: number): void {
  if (!Number.isInteger(groups) || groups < 1 || groups > shards)
    throw new InvalidShardCountError(groups, shards, 'groups');
}

/** The group (0..groups-1) of shard `shard` of `shards`, in `groups` groups (1..shards): `floor(shard * groups / shards)`. */
export function shardGroupOf(shard: number, shards: number, groups: number): number {
  assertGroups(groups, shards);
  return Math.floor((shard * groups) / shards);
}

/** The shards of group `group` of `groups`: `ceil(group * shards / groups)` up to the next group's first, exclusive. */
export function shardGroupSpan(group: number, shards: number, groups: number): ShardSpan {
  assertGroups(groups, shards);
  return {
    first: Math.ceil((group * shards) / groups),
    last: Math.ceil(((group + 1) * shards) / groups) - 1,
  };
}
