import { randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClientConfig } from '../../../support/local-aws.js';

// Every S3 call the project makes, through the real SDK v3 client against the run's S3 endpoint.
describe('S3 calls against the local stack', () => {
  const s3 = new S3Client(localClientConfig('s3'));
  const bucket = `it-s3-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(() => s3.destroy());

  it('puts, heads, gets and deletes a JSON record with user metadata', async () => {
    const key = 't=acme/r=orders/id=o-1.json';
    const body = JSON.stringify({ id: 'o-1', total: 42 });
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: body,
        ContentType: 'application/json',
        Metadata: { version: '1', 'updated-at': '2025-01-01T00:00:00.000Z' },
      }),
    );
    expect(put.ETag).toMatch(/^"[0-9a-f]+"$/);

    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.ContentLength).toBe(Buffer.byteLength(body));
    expect(head.ContentType).toBe('application/json');
    expect(head.Metadata).toEqual({ version: '1', 'updated-at': '2025-01-01T00:00:00.000Z' });
    expect(head.ETag).toBe(put.ETag);

    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(JSON.parse(await got.Body!.transformToString())).toEqual({ id: 'o-1', total: 42 });
    expect(got.Metadata?.version).toBe('1');

    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    await expect(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).rejects.toMatchObject({
      name: 'NoSuchKey',
      $metadata: { httpStatusCode: 404 },
    });
    await expect(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 404 },
    });
    // Deleting a missing key succeeds, as on S3 (the Database's idempotent delete relies on it).
    await expect(s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))).resolves.toBeDefined();
  });

  it('lists one prefix in pages with continuation tokens, never another prefix', async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `id=${String(i).padStart(2, '0')}.json`);
    await Promise.all([
      ...ids.map((id) =>
        s3.send(new PutObjectCommand({ Bucket: bucket, Key: `t=list/r=a/${id}`, Body: '{}' })),
      ),
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 't=other/r=a/id=x.json', Body: '{}' })),
    ]);
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: 't=list/r=a/',
          MaxKeys: 3,
          ContinuationToken: token,
        }),
      );
      pages++;
      seen.push(...(page.Contents ?? []).map((o) => o.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids.map((id) => `t=list/r=a/${id}`));
  });

  it('refuses a call to a missing bucket with NoSuchBucket', async () => {
    await expect(
      s3.send(new PutObjectCommand({ Bucket: `missing-${randomUUID().slice(0, 8)}`, Key: 'k', Body: 'x' })),
    ).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });
});
