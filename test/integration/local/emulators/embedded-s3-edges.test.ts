// S3 at the edges of its contract, as a client of the run's stack meets it (SDK v3, or raw HTTP): keys the
// embedded S3's gate and emulator must read alike, listing parameters S3 refuses, and tags across every way
// an object is written. Each expectation is S3's documented (or measured) answer; under `npm test` the
// stack is the embedded one, whose fidelity layer (lib/local/emulators) these tests hold to it.
import { randomUUID } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectTaggingCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  PutObjectTaggingCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localAwsEndpoints, localClientConfig } from '../../../support/local-aws.js';

const s3 = new S3Client({ ...localClientConfig('s3'), maxAttempts: 1 });
const bucket = `it-s3-edges-${randomUUID().slice(0, 8)}`;
beforeAll(async () => {
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(() => s3.destroy());

const put = (Key: string, Body: string, extra: Partial<PutObjectCommand['input']> = {}) =>
  s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body, ...extra }));
const tagsOf = async (Key: string) =>
  (await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key }))).TagSet?.map((t) => [t.Key, t.Value]);
/** A raw GET of the bucket with this query: status and the error `Code` (or '' for a listing). */
const rawList = async (query: string) => {
  const answer = await fetch(`${localAwsEndpoints().s3}/${bucket}?${query}`);
  const text = await answer.text();
  return { status: answer.status, code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? '', text };
};

describe('conditional writes hold for every key the emulator stores', () => {
  it('keys with "." and ".." segments: a second create is 412 and a stale If-Match is 412', async () => {
    for (const key of ['dots/./a.json', 'dots/../b.json', '..', 'dots/.']) {
      await put(key, 'first', { IfNoneMatch: '*' });
      await expect(put(key, 'second', { IfNoneMatch: '*' }), key).rejects.toMatchObject({
        name: 'PreconditionFailed',
        $metadata: { httpStatusCode: 412 },
      });
      await expect(put(key, 'second', { IfMatch: '"0123"' }), key).rejects.toMatchObject({
        name: 'PreconditionFailed',
      });
    }
  });
});

describe('DeleteObjects deletes the keys it names, whatever characters they hold', () => {
  it('keys with a newline, a carriage return or text that looks like an XML entity are deleted; Quiet lists none', async () => {
    const keys = ['batch/line\nbreak', 'batch/cr\rx', 'batch/amp&lt;', 'batch/a&b', 'batch/plain'];
    for (const key of keys) await put(key, 'x');
    const answer = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })) } }),
    );
    expect(answer.Deleted?.map((d) => d.Key)).toEqual(keys);
    const left = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'batch/' }));
    expect(left.Contents ?? []).toEqual([]);

    await put('batch/quiet', 'x');
    const quiet = await s3.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: [{ Key: 'batch/quiet' }], Quiet: true },
      }),
    );
    expect(quiet.Deleted ?? []).toEqual([]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'batch/' }))).KeyCount).toBe(0);
  });
});

describe('listing parameters as S3 reads them', () => {
  beforeAll(async () => {
    for (const key of ['list/a b/1', 'list/a+b', 'list/c']) await put(key, 'x');
  });

  it('max-keys 0 lists nothing and is not truncated (no token to follow)', async () => {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', MaxKeys: 0 }));
    expect(page).toMatchObject({ KeyCount: 0, IsTruncated: false });
    expect(page.NextContinuationToken).toBeUndefined();
  });

  it('a max-keys that is negative or not a number is 400 InvalidArgument', async () => {
    for (const value of ['-1', 'abc', '1.5']) {
      expect(await rawList(`list-type=2&max-keys=${value}`), value).toMatchObject({
        status: 400,
        code: 'InvalidArgument',
      });
    }
    await expect(s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: -1 }))).rejects.toMatchObject({
      name: 'InvalidArgument',
      $metadata: { httpStatusCode: 400 },
    });
  });

  it('a continuation token S3 did not issue is 400 InvalidArgument; an issued one resumes', async () => {
    await expect(
      s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: 'bGlzdC9j' })),
    ).rejects.toMatchObject({
      name: 'InvalidArgument',
      message: expect.stringContaining('continuation token'),
    });
    const first = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', MaxKeys: 1 }));
    const next = await s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: 'list/',
        ContinuationToken: first.NextContinuationToken as string,
      }),
    );
    expect([...(first.Contents ?? []), ...(next.Contents ?? [])].map((o) => o.Key)).toEqual([
      'list/a b/1',
      'list/a+b',
      'list/c',
    ]);
  });

  it('encoding-type=url encodes keys and prefixes but not "/"; any other encoding-type is 400', async () => {
    const { text } = await rawList('list-type=2&prefix=list/&delimiter=/&encoding-type=url');
    expect(text).toContain('<Prefix>list/</Prefix>');
    expect(text).toContain('<Key>list/a%2Bb</Key>');
    expect(text).toContain('<Prefix>list/a%20b/</Prefix>');
    expect(await rawList('list-type=2&encoding-type=xml')).toMatchObject({
      status: 400,
      code: 'InvalidArgument',
    });
  });
});

describe('object tags follow the object, however it was written', () => {
  const upload = async (Key: string, Tagging?: string) => {
    const { UploadId } = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: bucket, Key, ...(Tagging ? { Tagging } : {}) }),
    );
    const part = await s3.send(
      new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: 1, Body: 'part' }),
    );
    return s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag as string }] },
      }),
    );
  };

  it('a multipart upload: the tags given at its creation; an untagged one replaces a tagged object untagged', async () => {
    await upload('tags/multipart.json', 'state=hidden');
    expect(await tagsOf('tags/multipart.json')).toEqual([['state', 'hidden']]);
    await upload('tags/multipart.json');
    expect(await tagsOf('tags/multipart.json')).toEqual([]);
  });

  it("CopyObject: the source's tags by default, the request's with TaggingDirective REPLACE", async () => {
    await put('tags/source.json', 'src', { Tagging: 'a=1&b=2' });
    await s3.send(
      new CopyObjectCommand({
        Bucket: bucket,
        Key: 'tags/copy.json',
        CopySource: `${bucket}/tags/source.json`,
      }),
    );
    expect(await tagsOf('tags/copy.json')).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
    await s3.send(
      new CopyObjectCommand({
        Bucket: bucket,
        Key: 'tags/copy.json',
        CopySource: `${bucket}/tags/source.json`,
        TaggingDirective: 'REPLACE',
        Tagging: 'c=3',
      }),
    );
    expect(await tagsOf('tags/copy.json')).toEqual([['c', '3']]);
  });

  it('more than 10 tags is 400 BadRequest; a repeated tag key is 400 InvalidTag; nothing changes', async () => {
    const eleven = Array.from({ length: 11 }, (_, i) => `k${i}=v`).join('&');
    await put('tags/limits.json', 'x', { Tagging: 'keep=1' });
    await expect(put('tags/limits.json', 'y', { Tagging: eleven })).rejects.toMatchObject({
      name: 'BadRequest',
      $metadata: { httpStatusCode: 400 },
    });
    const TagSet = Array.from({ length: 11 }, (_, i) => ({ Key: `k${i}`, Value: 'v' }));
    await expect(
      s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'tags/limits.json', Tagging: { TagSet } })),
    ).rejects.toMatchObject({ name: 'BadRequest', $metadata: { httpStatusCode: 400 } });
    const repeated = [
      { Key: 'a', Value: '1' },
      { Key: 'a', Value: '2' },
    ];
    await expect(
      s3.send(
        new PutObjectTaggingCommand({
          Bucket: bucket,
          Key: 'tags/limits.json',
          Tagging: { TagSet: repeated },
        }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidTag', $metadata: { httpStatusCode: 400 } });
    expect(await tagsOf('tags/limits.json')).toEqual([['keep', '1']]);
  });
});
