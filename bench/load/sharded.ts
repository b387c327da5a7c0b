// Scenario `sharded` of bench:load (BENCH_LOAD_SCENARIO=sharded): one hot tenant whose resource is sharded
// over N prefixes, each limited apart at the proxy, against the same tenant unsharded (one prefix) and the
// pipeline with no limit at all, with the proxy's token bucket a second deep (sharded.ts says why; one
// row keeps its 0.1 s default). Target (issue: no tenant is a ceiling): the sharded hot tenant accepted at
// >= 90% of N x the per-prefix limit, 0 lost. Results: bench/results/load-sharded.json.
import { loadavg } from 'node:os';
import type { LoadRunConfig, LoadRunResult } from './engine.js';
import { hotPrefixFigures } from './limit-bound.js';

/** N of the sharded rows: the hot tenant's records over this many shard prefixes. */
export const SHARDS = 4;

/** The rows of the scenario, by BENCH_LOAD_ENGINES name. */
export function shardedPlan(messages: number): Array<{ key: string; label: string; config: LoadRunConfig }> {
  const base: LoadRunConfig = {
    engine: 'rate',
    messages,
    tenants: 50,
    // Half the messages: at N x 25 writes/s the hot tenant needs 200 messages/s of the pipeline, under the
    // ~350 messages/s this machine's local stack reaches with no limit.
    hotShare: 0.5,
    hotTenants: 1,
    writesPerSecond: 25,
    latency: { medianMs: 15, p99Ms: 80 },
    batchSize: 100,
    // Twice the stripes: a stripe idles between one holder's slots and the next holder's booking unless
    // another invocation is there to take it (docs/decisions/striped-shard-budgets.md).
    invocations: 2 * SHARDS,
    backlog: 1_000,
    poolConcurrency: 64,
    functionTimeoutMs: 8_000,
    maxReceiveCount: 5,
    // A second of the limit. Several holders' paced streams meet at each shard prefix (a hash spreads every
    // holder's writes over all shards), and at 25 writes/s a 0.1 s bucket holds 2.5 writes: their phases
    // line up past that often enough for the law to cut a third of the rate, where one holder's stream
    // alone (unsharded) fits it at 99.9%. At S3's 3,500 writes/s a tenth of a second holds 350 writes and
    // the same streams stay within a few percent. The `sharded-burst-0.1` row keeps the model's default.
    burstSeconds: 1,
  };
  return [
    {
      key: 'sharded',
      label: `createIngestHandler, hot tenant sharded over ${SHARDS} prefixes`,
      config: { ...base, shards: SHARDS },
    },
    {
      key: 'sharded-burst-0.1',
      label: `createIngestHandler, ${SHARDS} shards, proxy burst 0.1 s`,
      config: { ...base, shards: SHARDS, burstSeconds: 0.1 },
    },
    {
      key: 'unsharded',
      label: 'createIngestHandler, hot tenant on one prefix',
      config: { ...base, shards: 1, messages: Math.min(messages, 3_000) },
    },
    {
      key: 'ceiling',
      label: `ceiling: createIngestHandler, ${SHARDS} shards, no prefix limit`,
      config: { ...base, shards: SHARDS, unlimited: true },
    },
  ];
}

const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;

/** One run's figures. `ceilingHot`: the hot tenant's accepted writes/s with no limit (median of the ceiling runs). */
export function shardedFigures(r: LoadRunResult, writesPerSecond: number, ceilingHot: number | undefined) {
  const hot = hotPrefixFigures(r);
  const limit = r.shards * writesPerSecond;
  // The target: >= 90% of N x the limit, or of what the pipeline reaches with no limit when that is lower.
  const bound = Math.min(limit, ceilingHot ?? limit);
  const prefixes = Object.values(r.hotPrefixes);
  const accepted = prefixes.reduce((sum, p) => sum + p.ok, 0);
  // The busiest shard's share of the hot tenant's accepted writes, as a rate: no shard may run past the limit.
  const busiest = accepted === 0 ? 0 : Math.max(...prefixes.map((p) => p.ok)) / accepted;
  return {
    shards: r.shards,
    'messages/s': round(r.messages / (r.durationMs / 1000)),
    'hot writes/s': round(hot.acceptedBefore),
    'limit (N x per prefix)': r.unlimited ? undefined : limit,
    '% of bound': r.unlimited ? undefined : round((hot.acceptedBefore / bound) * 100),
    'busiest shard writes/s': r.shards === 1 ? undefined : round(hot.acceptedBefore * busiest),
    'hot 503s %': round(hot.throttledShare * 100, 2),
    'e2e p50 ms': Math.round(r.e2e.p50),
    'e2e p99 ms': Math.round(r.e2e.p99),
    'other tenants e2e p50 ms': Math.round(r.e2eCold.p50),
    deferred: r.deferred ?? 0,
    'invocations at cutoff': r.pool?.deadlineReached,
    lost: r.lost,
    'DynamoDB / S3 writes %': r.s3Writes === 0 ? undefined : round((r.dynamoWrites / r.s3Writes) * 100),
    'hot schedule at end (writes/s, ms booked ahead)':
      r.hotSchedule === undefined ? undefined : `${r.hotSchedule.rate}, ${r.hotSchedule.bookedAheadMs}`,
  };
}

/** Settings recorded beside the rows. */
export function shardedNote(): Record<string, unknown> {
  return {
    note:
      'Hot writes/s: write requests (PUT/DELETE) of tenant-00 accepted by the chaos proxy, summed over its ' +
      'prefixes, from its second hot second to its last. Sharded rows: RESOURCE_SHARDS {"items": N} and the ' +
      "proxy limits each shard prefix apart (S3's steady state once it partitioned them; the scale-up " +
      'before it is modelled by bench:fleet). "% of bound": of min(N x limit, the ceiling run\'s hot rate).',
    loadAverage: loadavg(),
  };
}
