// bench:fleet's model of S3 partitions over a sharded resource's shard prefixes (bench/fleet/
// s3-partitions.ts), and the object keys the cell checks for lost writes when the resource is sharded.
import { describe, expect, it } from 'vitest';
import { ShardPartitions } from '../../../bench/fleet/s3-partitions.js';
import { objectKey } from '../../../bench/fleet/workload.js';
import { ResourceLayout } from '../../../lib/db/resource-layout.js';

const key = (tenant: string, shard: number) =>
  `t=${tenant}/r=items/s=${String(shard).padStart(4, '0')}/id=m-1.json`;
/** Cumulative write counters of each named partition, as `S3BehaviourModel.stats().byPrefix` gives them. */
const counters = (entries: Record<string, number>) =>
  Object.fromEntries(Object.entries(entries).map(([name, ok]) => [name, { writes: { ok, throttled: 0 } }]));

describe('ShardPartitions', () => {
  it('pre-partitioned: every shard prefix is a partition of its own; unsharded keys stay their tenant prefix', () => {
    const p = new ShardPartitions(16, { prePartitioned: true, splitAfterSeconds: 5 });
    expect(p.partitionOf(key('t-0', 3))).toBe('t=t-0/s=0003');
    expect(p.partitionOf(key('t-0', 12))).toBe('t=t-0/s=0012');
    expect(p.partitionOf('t=t-0/r=other/id=x.json')).toBe('t=t-0/');
    expect(p.partitions('t=t-0/')).toBe(16);
  });

  it('from one partition per tenant, splits a partition hot for the set seconds at its middle shard, down to one shard', () => {
    const p = new ShardPartitions(4, { prePartitioned: false, splitAfterSeconds: 2 });
    expect(new Set([0, 1, 2, 3].map((s) => p.partitionOf(key('t-0', s))))).toEqual(new Set(['t=t-0/p=0']));
    // Half the limit (3,500 / 2) in each of two seconds: hot twice, then it splits at shard 2.
    p.tick(counters({ 't=t-0/p=0': 1750 }), 3500, 1000);
    expect(p.partitions('t=t-0/')).toBe(1);
    p.tick(counters({ 't=t-0/p=0': 3500 }), 3500, 2000);
    expect(p.splits).toEqual([{ atMs: 2000, tenant: 't=t-0/', from: 2 }]);
    expect([0, 1, 2, 3].map((s) => p.partitionOf(key('t-0', s)))).toEqual([
      't=t-0/p=0',
      't=t-0/p=0',
      't=t-0/p=2',
      't=t-0/p=2',
    ]);
    // Another tenant is untouched.
    expect(p.partitionOf(key('t-1', 3))).toBe('t=t-1/p=0');
    // Each half splits after its own heat; a second below half the limit starts the count again.
    p.tick(counters({ 't=t-0/p=0': 5250, 't=t-0/p=2': 1000 }), 3500, 3000);
    p.tick(counters({ 't=t-0/p=0': 5251, 't=t-0/p=2': 3000 }), 3500, 4000);
    p.tick(counters({ 't=t-0/p=0': 7000, 't=t-0/p=2': 5000 }), 3500, 5000);
    expect(p.splits.map((s) => s.from)).toEqual([2, 3]);
    p.tick(counters({ 't=t-0/p=0': 9000, 't=t-0/p=2': 7000, 't=t-0/p=3': 2000 }), 3500, 6000);
    p.tick(counters({ 't=t-0/p=0': 11000, 't=t-0/p=2': 9000, 't=t-0/p=3': 4000 }), 3500, 7000);
    // p=0 splits at 1; p=2 and p=3 are one shard each: never split again.
    expect(p.splits.map((s) => s.from)).toEqual([2, 3, 1]);
    expect(p.partitions('t=t-0/')).toBe(4);
  });

  it('objectKey with shards names the key the layout writes', () => {
    const layout = new ResourceLayout('t-7', 'items', '', 16);
    for (const i of [0, 1, 99, 12345]) expect(objectKey(i, 7, 16)).toBe(layout.keyOf(`m-${i}`));
    expect(objectKey(5, 7)).toBe('t=t-7/r=items/id=m-5.json');
  });
});
