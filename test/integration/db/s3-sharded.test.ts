import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase, RecordExistsError, shardOf } from '../../../lib/db/index.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';

// A sharded resource over the embedded S3, through the real SDK: keys under their shard prefixes, list as
// a merge of the shards' ListObjectsV2 (StartAfter) with pagination, count, and create races per record.

const bucket = `db-shards-${randomUUID().slice(0, 8)}`;
let admin: S3Client;
const opened: Database[] = [];

function connect(tenant: string): Database {
  const endpoint = new URL(localAwsEndpoints().s3);
  const db = openDatabase(`http://test:test@${endpoint.host}/${bucket}/it`, { tenant });
  opened.push(db);
  return db;
}

beforeAll(async () => {
  admin = new S3Client(localClientConfig('s3'));
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});

afterAll(async () => {
  await Promise.all(opened.map((db) => db.disconnect()));
  admin.destroy();
});

describe('a sharded resource over S3 (emulator)', () => {
  it('spreads records over s=<shard> prefixes; list pages through the merge in order; count agrees', async () => {
    const events = await connect('acme').createResource({ name: 'events', shards: 4 });
    // `a` and `a-1`: the key order (`id=a-1.json` < `id=a.json`) is the listing order, as unsharded.
    const ids = [...Array.from({ length: 37 }, (_, i) => `e-${String(i).padStart(3, '0')}`), 'a', 'a-1'];
    const results = await events.insertMany(ids.map((id) => ({ id, n: id.length })));
    expect(results.every((r) => r.ok)).toBe(true);

    const raw = await admin.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'it/t=acme/' }));
    const keys = raw.Contents?.map((o) => o.Key) ?? [];
    expect(keys).toHaveLength(ids.length);
    for (const id of ids) expect(keys).toContain(`it/t=acme/r=events/s=000${shardOf(id, 4)}/id=${id}.json`);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await events.list({ limit: 7, ...(cursor !== undefined ? { cursor } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(7);
      seen.push(...page.items.map((r) => r.id));
      cursor = page.cursor;
      pages += 1;
    } while (cursor !== undefined && pages < 20);
    expect(seen).toEqual([...ids].sort((x, y) => (`${x}.json` < `${y}.json` ? -1 : 1)));
    expect(seen.slice(0, 2)).toEqual(['a-1', 'a']);
    expect(pages).toBe(Math.ceil(ids.length / 7));
    expect(await events.count()).toBe(ids.length);
  });

  it('create races stay per record: 10 inserts of each of 8 ids across the shards, one winner each', async () => {
    const events = await connect('race').createResource({ name: 'events', shards: 4 });
    const ids = Array.from({ length: 8 }, (_, i) => `r-${i}`);
    expect(new Set(ids.map((id) => shardOf(id, 4))).size).toBeGreaterThan(1);
    const outcomes = await Promise.allSettled(
      ids.flatMap((id) => Array.from({ length: 10 }, (_, k) => events.insert({ k }, { id }))),
    );
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
    expect(won).toHaveLength(8);
    for (const err of lost) expect(err).toBeInstanceOf(RecordExistsError);
    expect((await events.list({ limit: 100 })).items.map((r) => r.id)).toEqual(ids);
  });
});
