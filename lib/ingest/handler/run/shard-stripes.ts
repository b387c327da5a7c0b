import type { IngestConfig } from '../../config.js';

// A sharded tenant's write rate in stripes (docs/decisions/striped-shard-budgets.md): K schedule items, each
// at `S3_PREFIX_WRITE_RATE`; a holder books one. A record's shard is a hash of its id, so every holder's
// writes spread over all N shards and the stripes together (at most K x the rate) send a shard at most the
// rate when K <= N.

/** The stripes of a sharded tenant's budget: the fewest shards of any sharded resource; 0 when none is sharded. */
export function stripeCount(config: Pick<IngestConfig, 'resourceShards'>): number {
  const counts = Object.values(config.resourceShards ?? {});
  return counts.length === 0 ? 0 : Math.min(...counts);
}

/** Whether every one of `resources` is sharded (and there is one at least): only then may its writes book a stripe. */
export function allSharded(
  config: Pick<IngestConfig, 'resourceShards'>,
  resources: readonly string[] | undefined,
): boolean {
  const shards = config.resourceShards;
  if (shards === undefined || resources === undefined || resources.length === 0) return false;
  return resources.every((r) => (shards[r] ?? 1) > 1);
}

/** The budget name of one stripe (0..stripes-1) of a tenant's sharded writes. */
export function stripeBudgetName(bucket: string, tenant: string, stripe: number, stripes: number): string {
  return `prefix:${bucket}/t=${tenant}/s=*/stripe=${stripe}of${stripes}`;
}
