// S3's partitions of a sharded resource's keys, per tenant prefix (docs/fleet-simulation.md, "S3
// partitions"). S3 serves ~3,500 writes/s per *partitioned* prefix and partitions a key range as its
// request rate stays high; a new prefix gets no capacity ahead of its load (S3 User Guide, "Optimizing
// performance"; re:Post knowledge center "s3-503-within-request-rate-prefix": S3 answers 503 Slow Down while
// it scales in the background). AWS does not say how long the scale-up takes: `splitAfterSeconds` is this
// model's assumption. The model: each tenant's shard prefixes (`.../s=<shard>/`) start in one partition
// (`prePartitioned`: one per shard, the steady state of a resource whose load S3 has seen before); a
// partition that is hot (sent at least `HOT_SHARE` of its write limit, refused requests included: they are
// load S3 sees) in every second for `splitAfterSeconds` splits at its middle shard, down to one shard per
// partition. A key with no shard
// segment (an unsharded resource) is its tenant prefix's, as in the rest of the model.
import { firstSegmentPrefix } from '../../lib/local/s3-behaviour/s3-behaviour-model.js';

/** A partition sent write requests at or above this share of its limit in a second counts as hot. */
const HOT_SHARE = 0.5;
const SHARD_SEGMENT = '/s=';
const SHARD_DIGITS = 4;

export interface ShardPartitionOptions {
  /** Every shard its own partition from the start (S3 already scaled), else one per tenant. */
  prePartitioned: boolean;
  /** Seconds a partition must stay hot before it splits in two (the model's assumption). */
  splitAfterSeconds: number;
}

/** Write counters of one model prefix (`S3BehaviourModel.stats().byPrefix`), what `tick` reads. */
interface WriteCounters {
  readonly writes: { readonly ok: number; readonly throttled: number };
}

/** A split: when (ms since the cell's start), which tenant prefix, the shard the new partition starts at. */
export interface PartitionSplit {
  atMs: number;
  tenant: string;
  from: number;
}

/** The partition of every key, and the splits as they happen (`tick` once a simulated second). */
export class ShardPartitions {
  /** Per tenant prefix, the first shard of each partition, ascending (absent: one partition, from 0). */
  readonly #starts = new Map<string, number[]>();
  /** Per partition name, consecutive hot seconds, and its counters at the last tick. */
  readonly #streaks = new Map<string, number>();
  readonly #last = new Map<string, { ok: number; throttled: number }>();
  readonly splits: PartitionSplit[] = [];

  constructor(
    private readonly shards: number,
    private readonly options: ShardPartitionOptions,
  ) {}

  /** The model prefix a request on `key` counts against: its partition (a key or a listed prefix). */
  readonly partitionOf = (key: string): string => {
    const tenant = firstSegmentPrefix(key);
    const at = key.indexOf(SHARD_SEGMENT, tenant.length);
    if (at === -1) return tenant;
    const label = key.slice(at + SHARD_SEGMENT.length, at + SHARD_SEGMENT.length + SHARD_DIGITS);
    if (this.options.prePartitioned) return `${tenant}s=${label}`;
    const starts = this.#starts.get(tenant);
    if (starts === undefined) return `${tenant}p=0`;
    const shard = Number(label);
    let i = starts.length - 1;
    while (i > 0 && starts[i]! > shard) i--;
    return `${tenant}p=${starts[i]}`;
  };

  /** Partitions of `tenant` (a tenant prefix) now. */
  partitions(tenant: string): number {
    return this.options.prePartitioned ? this.shards : (this.#starts.get(tenant)?.length ?? 1);
  }

  /**
   * Once a simulated second: each partition's writes since the last tick, from its model's counters;
   * a partition hot for `splitAfterSeconds` in a row splits at its middle shard (new buckets, full).
   */
  tick(byPrefix: Readonly<Record<string, WriteCounters>>, writeLimit: number, atMs: number): void {
    if (this.options.prePartitioned) return;
    for (const [name, counters] of Object.entries(byPrefix)) {
      const p = name.indexOf('p=');
      if (p === -1) continue;
      const last = this.#last.get(name) ?? { ok: 0, throttled: 0 };
      const ok = counters.writes.ok - last.ok;
      const throttled = counters.writes.throttled - last.throttled;
      this.#last.set(name, { ok: counters.writes.ok, throttled: counters.writes.throttled });
      const hot = ok + throttled >= HOT_SHARE * writeLimit;
      const streak = hot ? (this.#streaks.get(name) ?? 0) + 1 : 0;
      this.#streaks.set(name, streak);
      if (streak < this.options.splitAfterSeconds) continue;
      const tenant = name.slice(0, p);
      const first = Number(name.slice(p + 2));
      const starts = this.#starts.get(tenant) ?? [0];
      const i = starts.indexOf(first);
      const end = starts[i + 1] ?? this.shards;
      if (end - first < 2) continue;
      const from = first + Math.floor((end - first) / 2);
      starts.splice(i + 1, 0, from);
      this.#starts.set(tenant, starts);
      this.#streaks.set(name, 0);
      this.splits.push({ atMs, tenant, from });
    }
  }
}
