import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  type Message,
  ReceiveMessageCommand,
  type SendMessageBatchCommandInput,
  type SendMessageBatchCommandOutput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  Producer,
  type ProducerWrite,
  parseIngestMessage,
  SendFailedError,
  type SendResult,
} from '../../../lib/ingest/index.js';
import { localClientConfig } from '../../support/local-aws.js';

interface BatchCall {
  readonly ids: string[];
  readonly bytes: number;
}

/** A real SQS client against fauxqs, recording every SendMessageBatch call it makes. */
function recordingClient() {
  const client = new SQSClient(localClientConfig('sqs'));
  const calls: BatchCall[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'SendMessageBatchCommand') {
        const entries = (args.input as SendMessageBatchCommandInput).Entries ?? [];
        calls.push({
          ids: entries.map((e) => e.Id ?? ''),
          bytes: entries.reduce((sum, e) => sum + Buffer.byteLength(e.MessageBody ?? ''), 0),
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordBatchCalls' },
  );
  return { client, calls };
}

/**
 * Simulates SQS failing some entries of a call (server side, or the sender's fault): they are withheld from
 * the real request and reported in `Failed`, as SQS reports entries it did not enqueue.
 */
function failEntries(
  client: SQSClient,
  decide: (id: string, call: number) => 'fail' | 'sender-fault' | 'pass',
) {
  let call = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'SendMessageBatchCommand') return next(args);
      call++;
      const input = args.input as SendMessageBatchCommandInput;
      const verdicts = new Map((input.Entries ?? []).map((e) => [e.Id ?? '', decide(e.Id ?? '', call)]));
      const passing = (input.Entries ?? []).filter((e) => verdicts.get(e.Id ?? '') === 'pass');
      const failed = [...verdicts].filter(([, v]) => v !== 'pass');
      const result =
        passing.length > 0
          ? await next({ ...args, input: { ...input, Entries: passing } })
          : { output: { Successful: [], Failed: [], $metadata: {} }, response: {} };
      const output = result.output as SendMessageBatchCommandOutput;
      output.Failed = [
        ...(output.Failed ?? []),
        ...failed.map(([Id, v]) => ({
          Id,
          SenderFault: v === 'sender-fault',
          Code: v === 'sender-fault' ? 'InvalidParameterValue' : 'InternalError',
          Message: 'simulated',
        })),
      ];
      return result;
    },
    { step: 'initialize', name: 'failEntries', priority: 'low' },
  );
}

async function receiveAll(client: SQSClient, queueUrl: string, expected: number): Promise<Message[]> {
  const received: Message[] = [];
  const deadline = Date.now() + 15_000;
  while (received.length < expected && Date.now() < deadline) {
    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
      }),
    );
    received.push(...Messages);
    if (Messages.length > 0) {
      await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
        }),
      );
    }
  }
  return received;
}

/** Nothing more is queued (a short poll: fauxqs answers from its whole store, unlike sampled SQS). */
async function expectDrained(client: SQSClient, queueUrl: string): Promise<void> {
  const { Messages = [] } = await client.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  expect(Messages).toEqual([]);
}

const orders = (n: number, extra: Partial<{ blob: string }> = {}): ProducerWrite[] =>
  Array.from({ length: n }, (_, i) => ({
    tenant: `tenant-${i % 3}`,
    resource: 'orders',
    op: 'upsert' as const,
    id: `o-${i}`,
    data: { n: i, ...extra },
    priority: i % 101,
  }));

function messageIds(results: readonly SendResult[]): string[] {
  return results.map((r) => {
    if (r.error !== undefined) throw r.error;
    return r.messageId;
  });
}

const admin = new SQSClient(localClientConfig('sqs'));
const suffix = randomUUID().slice(0, 8);
let queueUrl: string;
let fifoUrl: string;

beforeAll(async () => {
  queueUrl = (await admin.send(new CreateQueueCommand({ QueueName: `producer-${suffix}` }))).QueueUrl!;
  fifoUrl = (
    await admin.send(
      new CreateQueueCommand({ QueueName: `producer-${suffix}.fifo`, Attributes: { FifoQueue: 'true' } }),
    )
  ).QueueUrl!;
});

afterAll(async () => {
  await admin.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  await admin.send(new DeleteQueueCommand({ QueueUrl: fifoUrl }));
  admin.destroy();
});

beforeEach(async () => {
  // Each test starts from an empty queue, so counts below are this test's messages only.
  await expectDrained(admin, queueUrl);
});

describe('Producer against fauxqs', () => {
  it('sends 25 writes in 3 SendMessageBatch calls and they arrive with the right bodies', async () => {
    const { client, calls } = recordingClient();
    const writes = orders(25);
    const results = await new Producer({ queueUrl, client }).sendMany(writes);

    expect(calls.map((c) => c.ids.length)).toEqual([10, 10, 5]);
    expect(results.map((r) => r.index)).toEqual([...writes.keys()]);
    const ids = messageIds(results);
    expect(new Set(ids).size).toBe(25);

    const received = await receiveAll(admin, queueUrl, 25);
    expect(received).toHaveLength(25);
    const byMessageId = new Map(received.map((m) => [m.MessageId, m]));
    writes.forEach((write, index) => {
      const message = byMessageId.get(ids[index]);
      expect(message, `write ${index}`).toBeDefined();
      const parsed = parseIngestMessage(message!.Body!, { messageId: message!.MessageId! });
      expect(parsed).toMatchObject({ ...write, messageId: message!.MessageId });
    });
    client.destroy();
  });

  it('packs batches under 256 KiB', async () => {
    const { client, calls } = recordingClient();
    // ~100 KB each: two fit in 256 KiB, three do not; the near-limit write must travel alone.
    const writes = [...orders(5, { blob: 'x'.repeat(100_000) }), ...orders(1, { blob: 'y'.repeat(255_000) })];
    const results = await new Producer({ queueUrl, client }).sendMany(writes);

    expect(calls.map((c) => c.ids.length)).toEqual([2, 2, 1, 1]);
    for (const call of calls) expect(call.bytes).toBeLessThanOrEqual(262_144);
    expect(calls[3]?.bytes).toBeGreaterThan(255_000);
    messageIds(results);
    const received = await receiveAll(admin, queueUrl, 6);
    const receivedBytes = received.reduce((sum, m) => sum + Buffer.byteLength(m.Body!), 0);
    expect(receivedBytes).toBe(calls.reduce((sum, c) => sum + c.bytes, 0));
    client.destroy();
  });

  it('retries only the entries SQS failed, and each write lands once', async () => {
    const { client, calls } = recordingClient();
    failEntries(client, (id, call) => (call === 1 && ['1', '4', '7'].includes(id) ? 'fail' : 'pass'));
    const writes = orders(10);
    const results = await new Producer({ queueUrl, client, retryBaseDelayMs: 1 }).sendMany(writes);

    expect(calls.map((c) => c.ids)).toEqual([[...writes.keys()].map(String), ['1', '4', '7']]);
    const ids = messageIds(results);
    const received = await receiveAll(admin, queueUrl, 10);
    expect(received.map((m) => m.MessageId).sort()).toEqual([...ids].sort());
    expect(received.map((m) => (JSON.parse(m.Body!) as { id: string }).id).sort()).toEqual(
      writes.map((w) => w.id).sort(),
    );
    await expectDrained(admin, queueUrl);
    client.destroy();
  });

  it('reports sender faults at once and gives up on server failures after the retries', async () => {
    const { client, calls } = recordingClient();
    failEntries(client, (id) => (id === '2' ? 'sender-fault' : id === '3' ? 'fail' : 'pass'));
    const results = await new Producer({ queueUrl, client, retries: 2, retryBaseDelayMs: 1 }).sendMany(
      orders(5),
    );

    expect(calls.map((c) => c.ids)).toEqual([['0', '1', '2', '3', '4'], ['3'], ['3']]);
    const [senderFault, exhausted] = [results[2]?.error, results[3]?.error];
    expect(senderFault).toBeInstanceOf(SendFailedError);
    expect(senderFault).toMatchObject({ name: 'SendFailedError', senderFault: true, attempts: 1 });
    expect(exhausted).toMatchObject({ code: 'InternalError', senderFault: false, attempts: 3 });
    expect(results.filter((r) => r.error === undefined).map((r) => r.index)).toEqual([0, 1, 4]);
    expect(await receiveAll(admin, queueUrl, 3)).toHaveLength(3);
    await expectDrained(admin, queueUrl);
    client.destroy();
  });

  it('reports a failed call per write instead of rejecting', async () => {
    const { client } = recordingClient();
    const missing = `${queueUrl}-missing`;
    const results = await new Producer({ queueUrl: missing, client }).sendMany(orders(3));
    for (const result of results) {
      expect(result.error).toBeInstanceOf(SendFailedError);
      expect(result.error?.senderFault).toBe(true);
    }
    await expect(new Producer({ queueUrl: missing, client }).send(orders(1)[0]!)).rejects.toBeInstanceOf(
      SendFailedError,
    );
    client.destroy();
  });

  it('FIFO: groups by record and deduplicates by key', async () => {
    const { client, calls } = recordingClient();
    const producer = new Producer({ queueUrl: fifoUrl, client });
    const write: ProducerWrite = {
      tenant: 'acme',
      resource: 'orders',
      op: 'insert',
      key: 'order-77',
      data: { n: 1 },
    };
    const first = await producer.send(write);
    const again = await producer.send(write);
    expect(first.sequenceNumber).toBeDefined();
    expect(again.messageId).toBe(first.messageId);
    // Same key, other tenant: not a duplicate.
    const other = await producer.send({ ...write, tenant: 'globex' });
    expect(other.messageId).not.toBe(first.messageId);
    expect(calls).toHaveLength(3);

    const received = await receiveAll(admin, fifoUrl, 2);
    expect(received.map((m) => m.Attributes?.MessageGroupId).sort()).toEqual([
      'acme/orders/key:order-77',
      'globex/orders/key:order-77',
    ]);
    const ids = received.map((m) => parseIngestMessage(m.Body!, { messageId: m.MessageId! }).id);
    // Both tenants derive the same id from the same key: ids are scoped by the tenant prefix.
    expect(new Set(ids).size).toBe(1);
    client.destroy();
  });

  it('FIFO without a key: one group per record, and two equal writes are two messages (no content dedup)', async () => {
    const { client } = recordingClient();
    const producer = new Producer({ queueUrl: fifoUrl, client });
    const write: ProducerWrite = {
      tenant: 'acme',
      resource: 'orders',
      op: 'upsert',
      id: 'o-1',
      data: { n: 1 },
    };
    const [a, b] = await Promise.all([producer.send(write), producer.send(write)]);
    expect(a.messageId).not.toBe(b.messageId);
    const received = await receiveAll(admin, fifoUrl, 2);
    expect(received.map((m) => m.Attributes?.MessageGroupId)).toEqual(['acme/orders/o-1', 'acme/orders/o-1']);
    expect(new Set(received.map((m) => m.Attributes?.MessageDeduplicationId)).size).toBe(2);
    client.destroy();
  });
});
