import { randomUUID } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PreconditionFailedError, type S3ObjectStore } from '../../lib/db/index.js';
import { rgwBucket, rgwClient, rgwObjectStore } from './support/rgw.js';

let client: S3Client;
let store: S3ObjectStore;

beforeAll(() => {
  client = rgwClient();
  store = rgwObjectStore(client);
});

afterAll(() => client.destroy());

/** A key prefix no other test uses. */
const fresh = (label: string) => `store-${label}-${randomUUID().slice(0, 8)}/`;

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err,
  );

describe('S3ObjectStore on Ceph RGW: conditional writes', () => {
  it('If-None-Match: * creates once; the second create is a PreconditionFailedError and changes nothing', async () => {
    const key = `${fresh('inm')}doc.json`;
    const first = await store.put({ key, body: '{"v":1}', ifNoneMatch: '*' });
    expect(first.etag).toMatch(/^"[0-9a-f]{32}"$/);

    const err = await rejection(store.put({ key, body: '{"v":2}', ifNoneMatch: '*' }));
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect(err).toMatchObject({ key, condition: 'if-none-match' });
    expect((err as Error).cause).toMatchObject({ $metadata: { httpStatusCode: 412 } });

    const stored = await store.get(key);
    expect(stored?.body).toBe('{"v":1}');
    expect(stored?.etag).toBe(first.etag);
  });

  it('20 racing If-None-Match: * creates of one key: exactly one wins, the store holds its body', async () => {
    const key = `${fresh('race')}doc.json`;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => store.put({ key, body: `{"writer":${i}}`, ifNoneMatch: '*' })),
    );
    const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
    const losers = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(19);
    for (const loser of losers) expect(loser).toBeInstanceOf(PreconditionFailedError);
    expect((await store.get(key))?.body).toBe(`{"writer":${winners[0]}}`);
  });

  it('If-Match with the current ETag replaces the object; with a stale one it is refused and nothing changes', async () => {
    const key = `${fresh('im')}doc.json`;
    const v1 = await store.put({ key, body: '{"v":1}' });
    const read = await store.get(key);
    expect(read?.etag).toBe(v1.etag);

    const v2 = await store.put({ key, body: '{"v":2}', ifMatch: read!.etag });
    expect(v2.etag).not.toBe(v1.etag);
    expect((await store.get(key))?.body).toBe('{"v":2}');

    const err = await rejection(store.put({ key, body: '{"v":3}', ifMatch: v1.etag }));
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect(err).toMatchObject({ key, condition: 'if-match' });
    const stored = await store.get(key);
    expect(stored?.body).toBe('{"v":2}');
    expect(stored?.etag).toBe(v2.etag);
  });

  it('If-Match on a missing key is a PreconditionFailedError (RGW answers 412 where S3 answers 404) and creates nothing', async () => {
    const key = `${fresh('im-missing')}doc.json`;
    const err = await rejection(
      store.put({ key, body: '{}', ifMatch: '"0123456789abcdef0123456789abcdef"' }),
    );
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect(err).toMatchObject({ key, condition: 'if-match' });
    expect(await store.get(key)).toBeUndefined();
  });

  it('get, head and delete: missing keys are undefined, delete is idempotent, metadata and content type round-trip', async () => {
    const key = `${fresh('crud')}doc.json`;
    expect(await store.get(key)).toBeUndefined();
    expect(await store.head(key)).toBeUndefined();
    await expect(store.delete(key)).resolves.toBeUndefined();

    const { etag } = await store.put({ key, body: '{"a":1}', metadata: { version: '3', 'updated-at': 'x' } });
    const object = await store.get(key);
    expect(object).toMatchObject({
      body: '{"a":1}',
      etag,
      contentType: 'application/json',
      metadata: { version: '3', 'updated-at': 'x' },
    });
    expect(await store.head(key)).toMatchObject({ etag, size: 7, metadata: { version: '3' } });

    await store.delete(key);
    await store.delete(key);
    expect(await store.get(key)).toBeUndefined();
  });
});

describe('S3ObjectStore on Ceph RGW: listing', () => {
  it('lists one prefix in key order, page by page with continuation tokens, and nothing from a sibling prefix', async () => {
    const base = fresh('list');
    const keys = ['a', 'b', 'c', 'd', 'e'].map((k) => `${base}r=orders/id=${k}.json`);
    const sibling = `${base}r=orders-archive/id=a.json`;
    const nested = `${base}r=orders/id=c.json/attachment`;
    await Promise.all([...keys, sibling, nested].map((key) => store.put({ key, body: '{}' })));

    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const page = await store.list({ prefix: `${base}r=orders/`, maxKeys: 2, continuationToken: token });
      pages.push(page.keys);
      token = page.continuationToken;
    } while (token !== undefined && pages.length < 10);

    expect(pages.map((p) => p.length)).toEqual([2, 2, 2]);
    // S3 lists in UTF-8 binary order: the nested key sorts right after its parent-looking key.
    expect(pages.flat()).toEqual([keys[0], keys[1], keys[2], nested, keys[3], keys[4]]);
    expect(pages.flat()).not.toContain(sibling);
  });

  it('a delimiter listing groups the layout into tenant prefixes (what tooling uses to enumerate tenants)', async () => {
    const base = fresh('delim');
    const tenants = ['acme', 'globex', 'initech'];
    await Promise.all(
      tenants.flatMap((t) =>
        [1, 2].map((i) => store.put({ key: `${base}t=${t}/r=orders/id=${i}.json`, body: '{}' })),
      ),
    );
    await store.put({ key: `${base}loose.json`, body: '{}' });

    const out = await client.send(
      new ListObjectsV2Command({ Bucket: rgwBucket(), Prefix: base, Delimiter: '/', MaxKeys: 2 }),
    );
    const second = await client.send(
      new ListObjectsV2Command({
        Bucket: rgwBucket(),
        Prefix: base,
        Delimiter: '/',
        MaxKeys: 2,
        ContinuationToken: out.NextContinuationToken,
      }),
    );
    const prefixes = [...(out.CommonPrefixes ?? []), ...(second.CommonPrefixes ?? [])].map((p) => p.Prefix);
    const loose = [...(out.Contents ?? []), ...(second.Contents ?? [])].map((o) => o.Key);
    expect(prefixes).toEqual(tenants.map((t) => `${base}t=${t}/`));
    expect(loose).toEqual([`${base}loose.json`]);
    expect(out.IsTruncated).toBe(true);
    expect(second.IsTruncated).toBe(false);
  });
});
