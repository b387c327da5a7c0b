// The local pipeline's lean SQS client (`createLocalSqsClient`) must carry the same messages as the SDK's
// default client: bodies and attributes intact through send, receive and delete, against the run's stack.
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  createLocalSqsClient,
  LOCAL_SQS_UNUSED_MIDDLEWARES,
  removeMiddlewares,
} from '../../../../lib/local/lambda/local-sqs-client.js';
import { localClientConfig } from '../../../support/local-aws.js';
import { createQueues, drain, sendBodies } from '../../../support/queues.js';

const config = localClientConfig('sqs');
const client = createLocalSqsClient({
  ...config,
  credentials: config.credentials ?? { accessKeyId: 'test', secretAccessKey: 'test' },
});
afterAll(() => client.destroy());

describe('createLocalSqsClient', () => {
  it('sends, receives and deletes messages with their bodies and attributes intact', async () => {
    const { queueUrl } = await createQueues(client);
    const bodies = Array.from({ length: 15 }, (_, i) => JSON.stringify({ i, text: `é ✓ ${'x'.repeat(i)}` }));
    const ids = await sendBodies(client, queueUrl, bodies, {
      MessageAttributes: { trace: { DataType: 'String', StringValue: 'abc' } },
    });
    expect(ids).toHaveLength(15);
    const received = await drain(client, queueUrl);
    expect(received.map((m) => m.Body).sort()).toEqual([...bodies].sort());
    expect(received.map((m) => m.MessageId).sort()).toEqual([...ids].sort());
    expect(received.every((m) => m.MessageAttributes?.trace?.StringValue === 'abc')).toBe(true);
    for (let i = 0; i < received.length; i += 10) {
      const batch = received.slice(i, i + 10);
      const res = await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
      expect(res.Failed ?? []).toEqual([]);
    }
    const left = await client.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0, VisibilityTimeout: 0 }),
    );
    expect(left.Messages ?? []).toEqual([]);
  });

  it('aborts a long poll in flight through an abortSignal option', async () => {
    const { queueUrl } = await createQueues(client);
    const abort = new AbortController();
    const receive = client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 5 }), {
      abortSignal: abort.signal,
    });
    setImmediate(() => abort.abort());
    const started = performance.now();
    await expect(receive).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - started).toBeLessThan(4_000);
  });

  it('keeps the cached middleware stack for calls whose only option is abortSignal', async () => {
    const { queueUrl } = await createQueues(client);
    const resolve = vi.spyOn(ReceiveMessageCommand.prototype, 'resolveMiddleware');
    try {
      const signal = new AbortController().signal;
      for (let i = 0; i < 3; i++)
        await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }), {
          abortSignal: signal,
        });
      expect(resolve.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      resolve.mockRestore();
    }
  });

  it('runs without the middlewares it trims', () => {
    const names = client.middlewareStack.identify().join('\n');
    for (const name of LOCAL_SQS_UNUSED_MIDDLEWARES) expect(names).not.toContain(name);
  });

  it('warns when a middleware to trim is not in the stack', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const fresh = createLocalSqsClient({
        ...config,
        credentials: { accessKeyId: 't', secretAccessKey: 't' },
      });
      expect(warn).not.toHaveBeenCalled();
      removeMiddlewares(fresh, ['loggerMiddleware', 'noSuchMiddleware']);
      expect(warn).toHaveBeenCalledTimes(2);
      expect(warn.mock.calls.map((c) => (c[1] as { type?: string }).type)).toEqual([
        'LocalSqsClientWarning',
        'LocalSqsClientWarning',
      ]);
      fresh.destroy();
    } finally {
      warn.mockRestore();
    }
  });
});
