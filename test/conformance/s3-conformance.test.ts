// The S3 the product depends on, as one suite run on every backend: the embedded S3 (fauxqs with the gate
// of lib/local/emulators/s3-conditional-writes.ts) in `npm test`, and Ceph RGW as well in `npm run
// test:backends`. Conditional writes, races, error shapes, listing, metadata and tags: what lib/db's
// S3ObjectStore sends and reads. Each backend's departures from S3 are declared once, in its `quirks`.
import { randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createS3Client, PreconditionFailedError, S3ObjectStore } from '../../lib/db/index.js';
import { type LocalAws, startLocalAws } from '../../lib/local/index.js';
import '../backends/support/backends.js';
import { rgwBucket, rgwClient } from '../backends/support/rgw.js';

/** Where a backend departs from S3 (the AWS column of each comment is what S3 does). */
interface Quirks {
  /** Status of `If-Match` on a missing key (S3: 404 NoSuchKey). */
  ifMatchOnMissingKey: number;
  /** Statuses a loser of racing writes may get (S3: 412, or 409 ConditionalRequestConflict: retry). */
  racingLoserStatuses: readonly number[];
  /** Whether `DeleteObject` honours `If-Match` (S3: yes). */
  conditionalDelete: boolean;
}

interface Backend {
  name: string;
  quirks: Quirks;
  /** Starts what the backend needs; returns a product S3 client (one attempt: the pool retries) and a bucket. */
  open(): Promise<{ client: S3Client; bucket: string; close(): Promise<void> }>;
}

const S3_BEHAVIOUR: Quirks = {
  ifMatchOnMissingKey: 404,
  racingLoserStatuses: [409, 412],
  conditionalDelete: true,
};

const embedded: Backend = {
  name: 'embedded S3 (fauxqs + conditional-write gate)',
  quirks: S3_BEHAVIOUR,
  async open() {
    const aws: LocalAws = await startLocalAws();
    const client = createS3Client({ ...aws.clientConfig.s3 });
    const bucket = 'conformance';
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    return {
      client,
      bucket,
      close: async () => {
        client.destroy();
        await aws.stop();
      },
    };
  },
};

/** Ceph RGW 16 (test:backends), measured: design.md, "Ceph RADOS Gateway". */
const rgw: Backend = {
  name: 'Ceph RGW',
  quirks: {
    // RGW answers 412 where S3 answers 404.
    ifMatchOnMissingKey: 412,
    // Racing If-Match losers get 500 from RGW.
    racingLoserStatuses: [409, 412, 500],
    conditionalDelete: false,
  },
  async open() {
    // rgwClient() also strips the quotes of If-Match: RGW compares it literally with its unquoted ETag.
    const client = rgwClient();
    return {
      client,
      bucket: rgwBucket(),
      close: async () => client.destroy(),
    };
  },
};

const backends = inject('backends') === undefined ? [embedded] : [embedded, rgw];

/** What a refused call rejects with, or a failure of the test when it was not refused. */
async function refusal(call: Promise<unknown>): Promise<S3ServiceException> {
  const outcome = await call.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(S3ServiceException);
  return outcome as S3ServiceException;
}

describe.each(backends)('S3 conformance: $name', (backend) => {
  let client: S3Client;
  let bucket: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ client, bucket, close } = await backend.open());
  });
  afterAll(() => close());

  /** A key under a prefix no other test uses. */
  const fresh = (label: string) => `conformance/${label}-${randomUUID().slice(0, 8)}/id=doc.json`;
  const put = (input: Omit<PutObjectCommandInput, 'Bucket'>) =>
    client.send(new PutObjectCommand({ Bucket: bucket, ...input }));
  const body = async (key: string) =>
    (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();

  describe('conditional writes', () => {
    it('If-None-Match: * creates once; the second create is 412 PreconditionFailed and changes nothing', async () => {
      const key = fresh('create');
      const first = await put({ Key: key, Body: '{"v":1}', IfNoneMatch: '*' });
      expect(first.ETag).toMatch(/^"[0-9a-f]{32}"$/);
      const again = await refusal(put({ Key: key, Body: '{"v":2}', IfNoneMatch: '*' }));
      expect(again).toMatchObject({
        name: 'PreconditionFailed',
        $fault: 'client',
        $metadata: { httpStatusCode: 412 },
      });
      expect(again.$metadata.requestId).toEqual(expect.any(String));
      expect(await body(key)).toBe('{"v":1}');
    });

    it('If-Match with the current ETag replaces the object; a stale one is 412 and changes nothing', async () => {
      const key = fresh('match');
      const v1 = await put({ Key: key, Body: '{"v":1}' });
      const v2 = await put({ Key: key, Body: '{"v":2}', IfMatch: v1.ETag });
      expect(v2.ETag).not.toBe(v1.ETag);
      const stale = await refusal(put({ Key: key, Body: '{"v":3}', IfMatch: v1.ETag }));
      expect(stale).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
      expect(await body(key)).toBe('{"v":2}');
    });

    it('If-Match on a missing key is refused (S3: 404 NoSuchKey) and creates nothing', async () => {
      const key = fresh('match-missing');
      const missing = await refusal(
        put({ Key: key, Body: '{}', IfMatch: '"0123456789abcdef0123456789abcdef"' }),
      );
      expect(missing.$metadata.httpStatusCode).toBe(backend.quirks.ifMatchOnMissingKey);
      if (backend.quirks.ifMatchOnMissingKey === 404) expect(missing.name).toBe('NoSuchKey');
      const head = await refusal(client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
      expect(head.$metadata.httpStatusCode).toBe(404);
    });

    /** 20 writers race to put `{"writer":i}` at `key` with `condition`: exactly one may win. */
    const race = async (key: string, condition: { IfNoneMatch?: string; IfMatch?: string }) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => put({ Key: key, Body: `{"writer":${i}}`, ...condition })),
      );
      const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
      expect(winners).toHaveLength(1);
      const loserStatuses = outcomes.flatMap((o) =>
        o.status === 'rejected' ? [(o.reason as S3ServiceException).$metadata.httpStatusCode] : [],
      );
      for (const status of loserStatuses) expect(backend.quirks.racingLoserStatuses).toContain(status);
      expect(await body(key)).toBe(`{"writer":${winners[0]}}`);
    };

    it('20 racing creates of one key: exactly one wins, every loser is refused, the object is the winner', async () => {
      await race(fresh('race-create'), { IfNoneMatch: '*' });
    });

    it('20 racing updates from one ETag: exactly one wins, the object is the winner', async () => {
      const key = fresh('race-update');
      const base = await put({ Key: key, Body: '{"writer":"base"}' });
      await race(key, { IfMatch: base.ETag });
    });

    it('DeleteObject with a stale If-Match', async () => {
      const key = fresh('delete-match');
      const v1 = await put({ Key: key, Body: '1' });
      await put({ Key: key, Body: '2' });
      const deleting = client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, IfMatch: v1.ETag }));
      if (backend.quirks.conditionalDelete) {
        expect(await refusal(deleting)).toMatchObject({
          name: 'PreconditionFailed',
          $metadata: { httpStatusCode: 412 },
        });
        expect(await body(key)).toBe('2');
      } else {
        await deleting;
        const gone = await refusal(client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
        expect(gone.$metadata.httpStatusCode).toBe(404);
      }
    });

    it("the product's S3ObjectStore maps a failed condition to PreconditionFailedError naming the key", async () => {
      const store = new S3ObjectStore(client, bucket);
      const key = fresh('store');
      await store.put({ key, body: '{"v":1}', ifNoneMatch: '*' });
      const exists = store.put({ key, body: '{"v":2}', ifNoneMatch: '*' });
      await expect(exists).rejects.toBeInstanceOf(PreconditionFailedError);
      await expect(exists).rejects.toMatchObject({ key, condition: 'if-none-match' });
      const missing = store.put({
        key: `${key}.none`,
        body: '{}',
        ifMatch: '"00000000000000000000000000000000"',
      });
      await expect(missing).rejects.toMatchObject({ key: `${key}.none`, condition: 'if-match' });
    });
  });

  describe('reads, metadata and tags', () => {
    it('a missing key: GET is 404 NoSuchKey, HEAD is 404', async () => {
      const key = fresh('absent');
      const get = await refusal(client.send(new GetObjectCommand({ Bucket: bucket, Key: key })));
      expect(get).toMatchObject({ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
      const head = await refusal(client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
      expect(head.$metadata.httpStatusCode).toBe(404);
    });

    it('content type and user metadata round-trip through GET and HEAD; GET and HEAD agree on the ETag', async () => {
      const key = fresh('meta');
      const written = await put({
        Key: key,
        Body: '{"total":5}',
        ContentType: 'application/json',
        Metadata: { version: '3', 'updated-at': '2026-12-02T00:00:00.000Z' },
      });
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      for (const answer of [got, head]) {
        expect(answer.ContentType).toBe('application/json');
        expect(answer.Metadata).toEqual({ version: '3', 'updated-at': '2026-12-02T00:00:00.000Z' });
        expect(answer.ETag).toBe(written.ETag);
      }
      expect(await got.Body!.transformToString()).toBe('{"total":5}');
    });

    it('tags set with the PUT are the object tags; a PUT without tags leaves the new object untagged', async () => {
      const key = fresh('tags');
      await put({ Key: key, Body: '{}', Tagging: 's3-ingest-hidden=1' });
      const tagged = await client.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: key }));
      expect(tagged.TagSet).toEqual([{ Key: 's3-ingest-hidden', Value: '1' }]);
      await put({ Key: key, Body: '{"visible":true}' });
      const untagged = await client.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: key }));
      expect(untagged.TagSet ?? []).toEqual([]);
    });
  });

  describe('listing', () => {
    const prefixOf = (label: string) => `conformance/list-${label}-${randomUUID().slice(0, 8)}/`;

    it('ListObjectsV2 pages a prefix in key order with continuation tokens and StartAfter', async () => {
      const prefix = prefixOf('page');
      const ids = [
        'id=A.json',
        'id=B.json',
        'id=_.json',
        'id=a.json',
        'id=b-1.json',
        'id=b.json',
        'id=z.json',
      ];
      for (const id of [...ids].reverse()) await put({ Key: `${prefix}${id}`, Body: '{}' });
      await put({ Key: `${prefix.slice(0, -1)}x/other.json`, Body: '{}' });
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: 3, ContinuationToken: token }),
        );
        pages++;
        expect(page.KeyCount).toBe(page.Contents?.length ?? 0);
        seen.push(...(page.Contents ?? []).map((o) => o.Key!.slice(prefix.length)));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
      // S3 lists keys in UTF-8 byte order.
      expect(seen).toEqual([...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      expect(pages).toBe(3);
      const after = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, StartAfter: `${prefix}id=_.json` }),
      );
      expect(after.Contents?.map((o) => o.Key!.slice(prefix.length))).toEqual([
        'id=a.json',
        'id=b-1.json',
        'id=b.json',
        'id=z.json',
      ]);
    });

    it('a delimiter groups the next level into common prefixes', async () => {
      const prefix = prefixOf('delim');
      for (const key of ['r=orders/id=1.json', 'r=orders/id=2.json', 'r=events/id=1.json', 'top.json']) {
        await put({ Key: `${prefix}${key}`, Body: '{}' });
      }
      const listed = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: '/' }),
      );
      expect(listed.CommonPrefixes?.map((p) => p.Prefix)).toEqual([
        `${prefix}r=events/`,
        `${prefix}r=orders/`,
      ]);
      expect(listed.Contents?.map((o) => o.Key)).toEqual([`${prefix}top.json`]);
    });
  });
});
