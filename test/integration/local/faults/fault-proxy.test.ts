import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpStatusOf, isThrottling, isTimeout, isTransient } from '../../../../lib/errors/classify.js';
import type { AwsService } from '../../../../lib/local/faults/aws-call.js';
import {
  type FaultProxy,
  type FaultRule,
  startFaultProxy,
} from '../../../../lib/local/faults/fault-proxy.js';
import { localAwsEndpoints, localClientConfig } from '../../../support/local-aws.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const name = `faults-${randomUUID().slice(0, 8)}`;
const direct = {
  s3: new S3Client(localClientConfig('s3')),
  dynamodb: new DynamoDBClient(localClientConfig('dynamodb')),
  sqs: new SQSClient(localClientConfig('sqs')),
};
let queueUrl: string;
beforeAll(async () => {
  await direct.s3.send(new CreateBucketCommand({ Bucket: name }));
  await direct.dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  queueUrl = (await direct.sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
});
afterAll(() => {
  for (const client of Object.values(direct)) client.destroy();
});

async function proxyFor(service: AwsService, rules: FaultRule[]): Promise<FaultProxy> {
  const proxy = await startFaultProxy({ service, target: localAwsEndpoints()[service], rules });
  cleanups.push(() => proxy.stop());
  return proxy;
}

/**
 * SDK clients through the proxy, one attempt each; `requestTimeout` ends a stalled request (long by
 * default: on this shared machine a healthy request can take a second).
 */
function clientsThrough(proxy: FaultProxy, requestTimeout = 10_000) {
  const options = {
    endpoint: proxy.endpoint,
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ requestTimeout, throwOnRequestTimeout: true }),
  };
  const clients = {
    s3: new S3Client({ ...localClientConfig('s3'), ...options }),
    dynamodb: new DynamoDBClient({ ...localClientConfig('dynamodb'), ...options }),
    sqs: new SQSClient({ ...localClientConfig('sqs'), ...options }),
  };
  cleanups.push(() => {
    for (const client of Object.values(clients)) client.destroy();
  });
  return clients;
}

const all = () => true;
const putObject = (key: string, body = 'x') => new PutObjectCommand({ Bucket: name, Key: key, Body: body });
const putItem = (pk: string) => new PutItemCommand({ TableName: name, Item: { pk: { S: pk } } });
const sendMessage = () => new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'hello' });

async function rejection(promise: Promise<unknown>): Promise<Error & { $fault?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('fault proxy: the SDK sees each service answer as the real one', () => {
  it.each([
    ['s3', 'error', 'InternalError', 500, 'server'],
    ['s3', 'throttle', 'SlowDown', 503, 'server'],
    ['dynamodb', 'error', 'InternalServerError', 500, 'server'],
    ['dynamodb', 'throttle', 'ProvisionedThroughputExceededException', 400, 'client'],
    ['sqs', 'error', 'InternalFailure', 500, 'server'],
    ['sqs', 'throttle', 'RequestThrottled', 400, 'client'],
  ] as const)('%s %s -> %s (%i)', async (service, fault, errorName, status, faultSide) => {
    const proxy = await proxyFor(service, [{ match: all, fault }]);
    const clients = clientsThrough(proxy);
    const call =
      service === 's3'
        ? clients.s3.send(putObject(`k-${randomUUID()}`))
        : service === 'dynamodb'
          ? clients.dynamodb.send(putItem(randomUUID()))
          : clients.sqs.send(sendMessage());
    const error = await rejection(call);
    expect(error.name).toBe(errorName);
    expect(httpStatusOf(error)).toBe(status);
    expect(error.$fault).toBe(faultSide);
    expect(isTransient(error)).toBe(true);
    expect(isThrottling(error)).toBe(fault === 'throttle');
    expect(proxy.injected()).toEqual({ [fault]: 1 });
  });

  it('a rule code picks another throttling code (DynamoDB and SQS ThrottlingException)', async () => {
    const dynamo = await proxyFor('dynamodb', [
      { match: all, fault: 'throttle', code: 'ThrottlingException' },
    ]);
    const sqs = await proxyFor('sqs', [{ match: all, fault: 'throttle', code: 'ThrottlingException' }]);
    const dynamoError = await rejection(clientsThrough(dynamo).dynamodb.send(putItem(randomUUID())));
    const sqsError = await rejection(clientsThrough(sqs).sqs.send(sendMessage()));
    for (const error of [dynamoError, sqsError]) {
      expect(error.name).toBe('ThrottlingException');
      expect(isThrottling(error)).toBe(true);
    }
  });

  it('stall: the request never reaches the service and is held until the client gives up', async () => {
    const proxy = await proxyFor('dynamodb', [{ match: all, fault: 'stall' }]);
    const pk = randomUUID();
    const error = await rejection(clientsThrough(proxy, 300).dynamodb.send(putItem(pk)));
    expect(isTimeout(error)).toBe(true);
    expect(
      (await direct.dynamodb.send(new GetItemCommand({ TableName: name, Key: { pk: { S: pk } } }))).Item,
    ).toBeUndefined();
    await expect.poll(() => proxy.heldRequests()).toBe(0);
  });

  it('unknown outcome: the service applies the call, the client gets no answer (S3 and DynamoDB)', async () => {
    const s3Proxy = await proxyFor('s3', [
      { match: (c) => c.operation === 'PutObject', fault: 'unknown-outcome' },
    ]);
    const dynamoProxy = await proxyFor('dynamodb', [
      { match: (c) => c.operation === 'PutItem', fault: 'unknown-outcome' },
    ]);
    const key = `k-${randomUUID()}`;
    const pk = randomUUID();
    const s3Error = await rejection(clientsThrough(s3Proxy).s3.send(putObject(key, 'applied')));
    const dynamoError = await rejection(clientsThrough(dynamoProxy).dynamodb.send(putItem(pk)));
    for (const error of [s3Error, dynamoError]) expect(isTransient(error)).toBe(true);
    const stored = await direct.s3.send(new GetObjectCommand({ Bucket: name, Key: key }));
    expect(await stored.Body!.transformToString()).toBe('applied');
    const item = await direct.dynamodb.send(new GetItemCommand({ TableName: name, Key: { pk: { S: pk } } }));
    expect(item.Item?.pk?.S).toBe(pk);
    expect(s3Proxy.calls().map((c) => [c.call.operation, c.fault, c.upstreamStatus])).toEqual([
      ['PutObject', 'unknown-outcome', 200],
    ]);
  });

  it('delay: the call reaches the service delayMs late and gets its own answer', async () => {
    const proxy = await proxyFor('s3', [
      { name: 'slow', match: (c) => c.key.startsWith('t=slow/'), fault: 'delay', delayMs: 300 },
    ]);
    const { s3 } = clientsThrough(proxy);
    const key = `t=slow/${randomUUID()}`;
    const startedAt = performance.now();
    await s3.send(putObject(key, 'late'));
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(295);
    const stored = await direct.s3.send(new GetObjectCommand({ Bucket: name, Key: key }));
    expect(await stored.Body!.transformToString()).toBe('late');
    expect(proxy.calls().map((c) => [c.call.operation, c.fault, c.upstreamStatus])).toEqual([
      ['PutObject', 'delay', 200],
    ]);
    expect(proxy.injected()).toEqual({ slow: 1 });
  });

  it('delay: a call its client gave up on before the delay ended never reaches the service', async () => {
    const proxy = await proxyFor('dynamodb', [{ match: all, fault: 'delay', delayMs: 1_000 }]);
    const pk = randomUUID();
    const error = await rejection(clientsThrough(proxy, 200).dynamodb.send(putItem(pk)));
    expect(isTimeout(error)).toBe(true);
    // Its delay is cancelled once the client has gone: nothing is left to forward.
    await expect.poll(() => proxy.heldRequests()).toBe(0);
    expect(proxy.calls().map((c) => [c.call.operation, c.fault, c.upstreamStatus])).toEqual([
      ['PutItem', 'delay', undefined],
    ]);
    expect(
      (await direct.dynamodb.send(new GetItemCommand({ TableName: name, Key: { pk: { S: pk } } }))).Item,
    ).toBeUndefined();
  });

  it('refuses a negative or infinite delayMs, naming the rule', async () => {
    await expect(
      startFaultProxy({
        service: 's3',
        target: localAwsEndpoints().s3,
        rules: [{ match: all, fault: 'delay', delayMs: -1 }],
      }),
    ).rejects.toMatchObject({
      name: 'InvalidLocalOptionError',
      message: expect.stringContaining('rules[0].delayMs'),
    });
  });

  it('faults only the calls a rule matches, at most `times`, and forwards the rest unchanged', async () => {
    const proxy = await proxyFor('sqs', [
      { name: 'attrs', match: (c) => c.operation === 'GetQueueAttributes', fault: 'error', times: 1 },
    ]);
    const { sqs } = clientsThrough(proxy);
    const attrs = () =>
      sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }));
    await expect(sqs.send(sendMessage())).resolves.toHaveProperty('MessageId');
    expect((await rejection(attrs())).name).toBe('InternalFailure');
    await expect(attrs()).resolves.toHaveProperty('Attributes');
    expect(proxy.calls().map((c) => [c.call.operation, c.rule])).toEqual([
      ['SendMessage', undefined],
      ['GetQueueAttributes', 'attrs'],
      ['GetQueueAttributes', undefined],
    ]);
    expect(proxy.injected()).toEqual({ attrs: 1 });
  });

  it('a rule whose matcher throws lets the call through and shows the error in calls()', async () => {
    const proxy = await proxyFor('dynamodb', [
      {
        name: 'buggy',
        match: () => {
          throw new Error('matcher bug');
        },
        fault: 'error',
      },
    ]);
    await expect(clientsThrough(proxy).dynamodb.send(putItem(randomUUID()))).resolves.toBeDefined();
    expect(proxy.calls().map((c) => [c.call.operation, c.fault, c.ruleError])).toEqual([
      ['PutItem', undefined, 'buggy: matcher bug'],
    ]);
  });

  it('probability: seeded dice, the same seed faults the same calls', async () => {
    const pattern = async (seed: number) => {
      const proxy = await startFaultProxy({
        service: 'dynamodb',
        target: localAwsEndpoints().dynamodb,
        seed,
        rules: [{ match: all, fault: 'error', probability: 0.5 }],
      });
      cleanups.push(() => proxy.stop());
      const { dynamodb } = clientsThrough(proxy);
      const outcomes: boolean[] = [];
      for (let i = 0; i < 16; i++)
        outcomes.push(
          await dynamodb.send(putItem(randomUUID())).then(
            () => true,
            () => false,
          ),
        );
      return outcomes;
    };
    const first = await pattern(7);
    expect(await pattern(7)).toEqual(first);
    expect(first.filter(Boolean).length).toBeGreaterThan(2);
    expect(first.filter((ok) => !ok).length).toBeGreaterThan(2);
  });

  it('counts the most S3 requests in flight per prefix', async () => {
    const proxy = await proxyFor('s3', []);
    const { s3 } = clientsThrough(proxy);
    await Promise.all(Array.from({ length: 4 }, (_, i) => s3.send(putObject(`t=peak/${i}`))));
    expect(proxy.peakInFlight()['t=peak/']).toBeGreaterThanOrEqual(1);
    expect(proxy.peakInFlight()['t=peak/']).toBeLessThanOrEqual(4);
  });
});
