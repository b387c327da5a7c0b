import { ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import { startLocalAws } from '../../../../lib/local/emulators/local-aws.js';

/** True when a TCP port on 127.0.0.1 can be bound again (nobody holds it). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

const portOf = (endpoint: string) => Number(new URL(endpoint).port);

const serverHandles = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;

// These start their own stacks: they are about the embedded emulators, whatever the run's target.
describe('startLocalAws', () => {
  it('runs two isolated stacks side by side and frees every port on stop', async () => {
    const handlesBefore = serverHandles();
    const [a, b] = await Promise.all([startLocalAws(), startLocalAws()]);
    const ports = [a, b].flatMap((s) => [portOf(s.endpoints.s3), portOf(s.endpoints.dynamodb)]);
    expect(new Set(ports).size).toBe(4);
    expect(a.endpoints.sqs).toBe(a.endpoints.s3);
    expect(a.endpoints.s3).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const s3a = new S3Client(a.clientConfig.s3);
    const s3b = new S3Client(b.clientConfig.s3);
    const sqs = new SQSClient(a.clientConfig.sqs);
    const dynamodb = new DynamoDBClient(a.clientConfig.dynamodb);
    try {
      await s3a.send(new CreateBucketCommand({ Bucket: 'only-in-a' }));
      await expect(s3a.send(new HeadBucketCommand({ Bucket: 'only-in-a' }))).resolves.toBeDefined();
      await expect(s3b.send(new HeadBucketCommand({ Bucket: 'only-in-a' }))).rejects.toMatchObject({
        $metadata: { httpStatusCode: 404 },
      });
      expect((await sqs.send(new ListQueuesCommand({}))).QueueUrls ?? []).toEqual([]);
      expect((await dynamodb.send(new ListTablesCommand({}))).TableNames).toEqual([]);
    } finally {
      for (const client of [s3a, s3b, sqs, dynamodb]) client.destroy();
    }

    await Promise.all([a.stop(), b.stop()]);
    await a.stop(); // idempotent
    expect(serverHandles()).toBe(handlesBefore);
    for (const port of ports) expect(await portIsFree(port)).toBe(true);
  });

  it('takes consecutive ports from a given base port and puts the chaos proxy in front of S3', async () => {
    // Find a free range: bind any port, release it, and use it as the base (retry if the range is taken).
    let stack: Awaited<ReturnType<typeof startLocalAws>> | undefined;
    for (let attempt = 0; stack === undefined && attempt < 5; attempt++) {
      const probe = createServer();
      const base = await new Promise<number>((resolve) =>
        probe.listen(0, '127.0.0.1', () => resolve((probe.address() as { port: number }).port)),
      );
      await new Promise((resolve) => probe.close(resolve));
      if (base > 65_000) continue;
      stack = await startLocalAws({ port: base, chaos: { writesPerSecond: 0 } }).catch(() => undefined);
      if (stack !== undefined) {
        expect(stack.emulatorEndpoints).toEqual({
          s3: `http://127.0.0.1:${base}`,
          sqs: `http://127.0.0.1:${base}`,
          dynamodb: `http://127.0.0.1:${base + 1}`,
        });
        expect(stack.endpoints.s3).toBe(`http://127.0.0.1:${base + 2}`);
      }
    }
    expect(stack).toBeDefined();
    const aws = stack!;
    expect(aws.chaos?.endpoint).toBe(aws.endpoints.s3);
    expect(aws.clientConfig.s3.endpoint).toBe(aws.endpoints.s3);
    const viaChaos = new S3Client({ ...aws.clientConfig.s3, maxAttempts: 1 });
    const direct = new S3Client({ ...aws.clientConfig.s3, endpoint: aws.emulatorEndpoints.s3 });
    try {
      await expect(viaChaos.send(new CreateBucketCommand({ Bucket: 'chaos-bucket' }))).rejects.toMatchObject({
        name: 'SlowDown',
      });
      await expect(direct.send(new CreateBucketCommand({ Bucket: 'chaos-bucket' }))).resolves.toBeDefined();
      expect(aws.chaos?.model.stats().total.throttled).toBe(1);
    } finally {
      viaChaos.destroy();
      direct.destroy();
      await aws.stop();
    }
    expect(await portIsFree(portOf(aws.endpoints.s3))).toBe(true);
  });

  it('rejects an invalid port with a typed error', async () => {
    await expect(startLocalAws({ port: -1 })).rejects.toMatchObject({
      name: 'InvalidLocalOptionError',
      option: 'port',
    });
  });

  it('answers each request once: no second send of a reply already on its way', async () => {
    // A second send of the same reply writes its headers again (ERR_HTTP_HEADERS_SENT) and runs Fastify's
    // error handler: two error objects per answer, a share of the emulator's CPU on every S3 request.
    let lateHeaderWrites = 0;
    const writeHead = ServerResponse.prototype.writeHead;
    const spy = vi.spyOn(ServerResponse.prototype, 'writeHead').mockImplementation(function (
      this: ServerResponse,
      ...args: Parameters<ServerResponse['writeHead']>
    ) {
      if (this.headersSent) lateHeaderWrites++;
      return writeHead.apply(this, args);
    });
    const aws = await startLocalAws();
    const s3 = new S3Client(aws.clientConfig.s3);
    const sqs = new SQSClient(aws.clientConfig.sqs);
    try {
      await s3.send(new CreateBucketCommand({ Bucket: 'once' }));
      await s3.send(new PutObjectCommand({ Bucket: 'once', Key: 't/a.json', Body: '{}', Tagging: 'k=v' }));
      await s3
        .send(new PutObjectCommand({ Bucket: 'once', Key: 't/a.json', Body: '{}', IfMatch: '"nope"' }))
        .catch(() => undefined);
      await (
        await s3.send(new GetObjectCommand({ Bucket: 'once', Key: 't/a.json' }))
      ).Body?.transformToString();
      await s3.send(new HeadObjectCommand({ Bucket: 'once', Key: 't/a.json' }));
      await s3.send(new ListObjectsV2Command({ Bucket: 'once', Prefix: 't/' }));
      await s3.send(new DeleteObjectCommand({ Bucket: 'once', Key: 't/a.json' }));
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'once' }));
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
      const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 0 }));
      await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: Messages?.[0]?.ReceiptHandle }));
      expect(spy).toHaveBeenCalled();
      expect(lateHeaderWrites).toBe(0);
    } finally {
      spy.mockRestore();
      s3.destroy();
      sqs.destroy();
      await aws.stop();
    }
  });
});
