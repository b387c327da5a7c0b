// `inspect`'s bucket count: record keys of unsharded resources (`t=<tenant>/r=<resource>/id=<id>.json`) and
// of sharded ones (`.../r=<resource>/s=<shard>/id=<id>.json`, docs/decisions/sharded-keys.md) count as
// their tenant's resource's records; anything else is another object. After a completed resharding copy
// (its marker under t=<tenant>/layout-copy/), only the new layout's keys count; the old ones apart.
import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { countBucket } from '../../../lib/cli/inspect.js';
import { shardLabel, shardOf } from '../../../lib/db/shard-hash.js';

/** An S3 client whose listing answers `pages` in turn. */
function listing(...pages: string[][]): S3Client {
  let page = 0;
  return {
    send: async () => {
      const keys = pages[page++] ?? [];
      return {
        Contents: keys.map((Key) => ({ Key })),
        IsTruncated: page < pages.length,
        NextContinuationToken: String(page),
      };
    },
  } as unknown as S3Client;
}

describe('inspect: countBucket', () => {
  it('counts sharded record keys under their resource, over every shard and page', async () => {
    const counts = await countBucket(
      listing(
        ['t=acme/r=orders/s=0000/id=1.json', 't=acme/r=orders/s=0007/id=2.json', 't=acme/r=users/id=1.json'],
        ['pre/t=whale/r=orders/s=0015/id=9.json', 'README'],
      ),
      'bucket',
    );
    expect(counts).toEqual({
      total: 4,
      other: 1,
      byTenant: { acme: { orders: 2, users: 1 }, whale: { orders: 1 } },
    });
  });

  it('counts a key with a malformed shard segment as another object', async () => {
    const counts = await countBucket(
      listing([
        't=acme/r=orders/s=/id=1.json',
        't=acme/r=orders/s=1/x/id=1.json',
        't=acme/r=orders/x=1/id=1.json',
      ]),
      'bucket',
    );
    expect(counts).toEqual({ total: 0, other: 3, byTenant: {} });
  });
});

describe('inspect: countBucket during a move to another shard count', () => {
  const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const keyIn = (shards: number, id: string, tenant = 'acme') =>
    shards === 1
      ? `t=${tenant}/r=orders/id=${id}.json`
      : `t=${tenant}/r=orders/s=${shardLabel(shardOf(id, shards))}/id=${id}.json`;
  const sorted = (keys: string[]) => [...new Set(keys)].sort();

  it('counts each record once after a completed copy, its old layout keys apart until they are removed', async () => {
    const keys = sorted([
      't=acme/layout-copy/r=orders/from=1/to=4.json',
      ...ids.map((id) => keyIn(1, id)),
      ...ids.map((id) => keyIn(4, id)),
      // Another tenant, not moved: its keys count as they are.
      ...ids.slice(0, 3).map((id) => keyIn(1, id, 'minnow')),
    ]);
    const counts = await countBucket(listing(keys.slice(0, 7), keys.slice(7)), 'bucket');
    expect(counts).toEqual({
      total: 11,
      other: 1,
      byTenant: { acme: { orders: 8 }, minnow: { orders: 3 } },
      oldLayoutKeys: { acme: { orders: { fromShards: 1, toShards: 4, keys: 8 } } },
    });
  });

  it("a key both layouts share (the same shard under 2 and 4) is the new layout's record, counted once", async () => {
    const shared = ids.filter((id) => keyIn(2, id) === keyIn(4, id));
    expect(shared.length).toBeGreaterThan(0);
    const keys = sorted([
      't=acme/layout-copy/r=orders/from=2/to=4.json',
      ...ids.map((id) => keyIn(2, id)),
      ...ids.map((id) => keyIn(4, id)),
    ]);
    const counts = await countBucket(listing(keys), 'bucket');
    expect(counts.byTenant).toEqual({ acme: { orders: 8 } });
    expect(counts.oldLayoutKeys).toEqual({
      acme: { orders: { fromShards: 2, toShards: 4, keys: 8 - shared.length } },
    });
  });
});
