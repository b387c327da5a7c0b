import { shardLabel, shardOf } from '../../lib/db/shard-hash.js';

// The messages of one cell, fixed by a seed: which tenant each message writes to (uniform or Zipf over the
// tenants, plus an optional hot-tenant burst), which operation, and which ones are poison.

/**
 * `uniform` and `zipf` over the tenants; `two-hot`: bench:load's pattern (tenants 0 and 1 get `hotShare` of
 * the messages each, the rest spread evenly), for the calibration against the local stack.
 */
export type Skew = 'uniform' | 'zipf' | 'two-hot';

export interface WorkloadOptions {
  messages: number;
  tenants: number;
  skew: Skew;
  /** Zipf exponent. @default 1.1 */
  zipfExponent?: number;
  /** From message `from` to `to` (send order), `share` of the messages go to tenant 0 on top of the skew. */
  burst?: { from: number; to: number; share: number };
  /** `two-hot` only: share of all messages for each of tenants 0 and 1. @default 0.25 */
  hotShare?: number;
  /** Share of messages that are permanent failures (an undeclared resource): they go to the DLQ. */
  poisonRate: number;
}

/** Tenant index per message (0 is the most popular under Zipf) and the poison flags. */
export interface Workload {
  tenantOf: Int32Array;
  poison: Uint8Array;
}

/** Cumulative Zipf(s) weights over ranks 1..n, normalised to end at 1. */
export function zipfCdf(n: number, s: number): Float64Array {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += 1 / k ** s;
    cdf[k - 1] = sum;
  }
  for (let k = 0; k < n; k++) cdf[k]! /= sum;
  return cdf;
}

/** Smallest index whose cumulative weight is >= u. */
export function sampleCdf(cdf: Float64Array, u: number): number {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cdf[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function generateWorkload(options: WorkloadOptions, random: () => number): Workload {
  const tenantOf = new Int32Array(options.messages);
  const poison = new Uint8Array(options.messages);
  const cdf = options.skew === 'zipf' ? zipfCdf(options.tenants, options.zipfExponent ?? 1.1) : undefined;
  const burst = options.burst;
  for (let i = 0; i < options.messages; i++) {
    const u = random();
    const b = random();
    const p = random();
    if (burst !== undefined && i >= burst.from && i < burst.to && b < burst.share) tenantOf[i] = 0;
    else if (options.skew === 'two-hot')
      tenantOf[i] = twoHotTenant(i, options.tenants, options.hotShare ?? 0.25);
    else tenantOf[i] = cdf === undefined ? Math.floor(u * options.tenants) : sampleCdf(cdf, u);
    poison[i] = p < options.poisonRate ? 1 : 0;
  }
  return { tenantOf, poison };
}

/** bench/load/engine.ts's `tenantOf`, by message index. */
export function twoHotTenant(i: number, tenants: number, hotShare: number): number {
  const slot = (i % 1000) / 1000;
  return slot < hotShare ? 0 : slot < 2 * hotShare ? 1 : 2 + (i % Math.max(1, tenants - 2));
}

const PAYLOAD = 'x'.repeat(200);

/**
 * The SQS body of message `index` (contract v1), one record each with an explicit id: every fifth an
 * upsert and the rest inserts, or all upserts (`allUpserts`: bench:load's workload, for the calibration).
 */
export function messageBody(index: number, tenant: number, poison: boolean, allUpserts = false): string {
  const op = allUpserts || index % 5 === 0 ? 'upsert' : 'insert';
  const resource = poison ? 'undeclared' : 'items';
  return `{"v":1,"tenant":"t-${tenant}","resource":"${resource}","op":"${op}","id":"m-${index}","data":{"n":${index},"payload":"${PAYLOAD}"}}`;
}

/**
 * The object key message `index` writes: the layout's `t=<tenant>/r=<resource>/id=<id>.json`, or with
 * `shards` > 1 `.../r=<resource>/s=<shard>/id=<id>.json` (lib/db/shard-hash.ts).
 */
export function objectKey(index: number, tenant: number, shards = 1): string {
  const id = `m-${index}`;
  const shard = shards === 1 ? '' : `s=${shardLabel(shardOf(id, shards))}/`;
  return `t=t-${tenant}/r=items/${shard}id=${id}.json`;
}
