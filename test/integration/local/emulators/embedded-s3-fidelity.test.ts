// What the embedded stack adds to fauxqs so that it behaves as AWS where the product depends on it, beyond
// what the cross-backend suite (test/conformance/s3-conformance.test.ts) checks: conditional writes stay
// linearised when unconditional writes, deletes and vanishing clients race them, and the queue URLs it
// hands out work for a plain SDK client.
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAws, startLocalAws } from '../../../../lib/local/index.js';

let aws: LocalAws;
let s3: S3Client;
const bucket = 'fidelity';

beforeAll(async () => {
  aws = await startLocalAws();
  s3 = new S3Client({ ...aws.clientConfig.s3, maxAttempts: 1 });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  s3.destroy();
  await aws.stop();
});

const body = async (key: string) =>
  (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();
const put = (Key: string, Body: string, condition: { IfMatch?: string; IfNoneMatch?: string } = {}) =>
  s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body, ...condition }));
const outcome = (call: Promise<unknown>) =>
  call.then(
    () => 'ok' as const,
    (error: { name?: string }) => error.name ?? 'error',
  );

describe('embedded S3: conditional writes are linearised against every other write of the key', () => {
  it('DeleteObjects racing a create: the create wins only where the key was free at its turn', async () => {
    for (let round = 0; round < 20; round++) {
      const key = `race/delete-vs-create-${round}.json`;
      await put(key, 'old');
      const [created] = await Promise.all([
        outcome(put(key, 'new', { IfNoneMatch: '*' })),
        s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: key }] } })),
      ]);
      const exists = await outcome(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
      // Created after the delete: it exists and holds 'new'. Refused (the delete came second): it is gone.
      if (created === 'ok') expect(await body(key)).toBe('new');
      else expect([created, exists]).toEqual(['PreconditionFailed', 'NotFound']);
    }
  });

  it('clients that give up while their conditional writes wait leave the key free for the next writer', async () => {
    const key = 'race/abandoned.json';
    const abandoned = Array.from({ length: 30 }, (_, i) => {
      const controller = new AbortController();
      const call = outcome(
        s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `w${i}`, IfNoneMatch: '*' }), {
          abortSignal: controller.signal,
        }),
      );
      if (i % 2 === 1) setImmediate(() => controller.abort());
      return call;
    });
    const outcomes = await Promise.all(abandoned);
    expect(outcomes.filter((o) => o === 'ok').length).toBeLessThanOrEqual(1);
    // The key is not held: a write after them is answered (a held key would hang it until the test times out).
    const after = await put(key, 'after');
    expect(after.ETag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(await body(key)).toBe('after');
  });
});

describe('embedded SQS: queue URLs a plain SDK v3 client can use', () => {
  it('hands out URLs on the address it listens on; a client configured only by AWS_ENDPOINT_URL_SQS uses them', async () => {
    const admin = new SQSClient(aws.clientConfig.sqs);
    const { QueueUrl } = await admin.send(new CreateQueueCommand({ QueueName: 'plain-client' }));
    expect(QueueUrl).toBe(`${aws.endpoints.sqs}/000000000000/plain-client`);
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SQS: aws.endpoints.sqs,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const plain = new SQSClient({});
    try {
      // A body that looks like the emulator's own URLs is a message, not an answer to rewrite.
      const text = 'http://sqs.us-east-1.localhost:4566/000000000000/plain-client';
      await plain.send(new SendMessageCommand({ QueueUrl, MessageBody: text }));
      const received = await plain.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
      expect(received.Messages?.map((m) => m.Body)).toEqual([text]);
    } finally {
      process.env = saved;
      plain.destroy();
      admin.destroy();
    }
  });
});
