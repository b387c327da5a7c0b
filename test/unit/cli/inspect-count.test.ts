// `inspect`'s bucket count: record keys of unsharded resources (`t=<tenant>/r=<resource>/id=<id>.json`) and
// of sharded ones (`.../r=<resource>/s=<shard>/id=<id>.json`, docs/decisions/sharded-keys.md) count as
// their tenant's resource's records; anything else is another object.
import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { countBucket } from '../../../lib/cli/inspect.js';

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
