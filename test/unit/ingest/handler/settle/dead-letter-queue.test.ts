import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SendMessageBatchCommand,
  type SendMessageBatchResult,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type DeadLetter,
  DeadLetterQueue,
} from '../../../../../lib/ingest/handler/settle/dead-letter-queue.js';
import { localClientConfig } from '../../../../support/local-aws.js';

const sqs = new SQSClient(localClientConfig('sqs'));
afterAll(() => sqs.destroy());

function letter(overrides: Partial<DeadLetter> = {}): DeadLetter {
  return {
    messageId: randomUUID(),
    body: '{"v":1,"tenant":"acme"}',
    reason: 'schema',
    errorName: 'InvalidMessageError',
    detail: 'op: required',
    tenant: 'acme',
    ...overrides,
  };
}

async function createQueue(fifo: boolean): Promise<string> {
  const name = `dlq-${randomUUID().slice(0, 8)}${fifo ? '.fifo' : ''}`;
  // No content-based deduplication: every send must carry its own deduplication id, as on AWS by default.
  const out = await sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: fifo ? { FifoQueue: 'true' } : {} }),
  );
  return out.QueueUrl!;
}

/** Receives and deletes until the queue is empty (a FIFO queue hides a group while one of it is in flight). */
async function receiveAll(queueUrl: string): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (!out.Messages?.length) return all;
    for (const m of out.Messages) {
      all.push(m);
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

const attr = (m: Message, name: string) => m.MessageAttributes?.[name]?.StringValue;

describe('DeadLetterQueue on a FIFO DLQ (issue 14, defect 9)', () => {
  it('delivers letters with the source message group, else a stable group, and a deterministic dedup id', async () => {
    const dlqUrl = await createQueue(true);
    const dlq = new DeadLetterQueue(sqs, dlqUrl);
    const fromGroup = letter({ messageGroupId: 'acme' });
    const noGroup = letter();
    const failed = await dlq.send([fromGroup, noGroup]);
    expect([...failed]).toEqual([]);

    const received = await receiveAll(dlqUrl);
    expect(received.map((m) => attr(m, 'sourceMessageId')).sort()).toEqual(
      [fromGroup.messageId, noGroup.messageId].sort(),
    );
    const groupOf = (id: string) =>
      received.find((m) => attr(m, 'sourceMessageId') === id)?.Attributes?.MessageGroupId;
    expect(groupOf(fromGroup.messageId)).toBe('acme');
    expect(groupOf(noGroup.messageId)).toMatch(/^[\x21-\x7e]{1,128}$/);

    // The same letter again (a redelivered source message): deduplicated, reported as sent.
    const again = await dlq.send([noGroup]);
    expect([...again]).toEqual([]);
    expect(await receiveAll(dlqUrl)).toEqual([]);
  });

  it('sends no FIFO parameters to a standard DLQ', async () => {
    const dlqUrl = await createQueue(false);
    const failed = await new DeadLetterQueue(sqs, dlqUrl).send([letter({ messageGroupId: 'acme' })]);
    expect([...failed]).toEqual([]);
    expect(await receiveAll(dlqUrl)).toHaveLength(1);
  });
});

describe('DeadLetterQueue counts only what SQS confirmed (issue 14, defect 10)', () => {
  it('reports a letter SQS listed neither in Successful nor in Failed as not dead-lettered', async () => {
    const letters = [letter(), letter(), letter()];
    // SQS confirms entry 0, fails entry 1, and says nothing about entry 2.
    const client = {
      send: async (command: SendMessageBatchCommand): Promise<SendMessageBatchResult> => {
        const [first, second] = command.input.Entries!;
        return {
          Successful: [{ Id: first!.Id!, MessageId: 'm-0', MD5OfMessageBody: '' }],
          Failed: [{ Id: second!.Id!, Code: 'InternalError', SenderFault: false }],
        };
      },
    } as unknown as SQSClient;
    const failed = await new DeadLetterQueue(client, 'https://sqs.us-east-1.amazonaws.com/1/dlq').send(
      letters,
    );
    expect([...failed].sort()).toEqual([letters[1]!.messageId, letters[2]!.messageId].sort());
  });
});

describe('DeadLetterQueue escapes what SQS refuses in attributes (issue 14, defect 13)', () => {
  it('sends a detail holding U+FFFE, U+FFFF, a control character and a lone surrogate', async () => {
    const dlqUrl = await createQueue(false);
    // 499 ASCII characters then an astral character: the 500-character cut falls inside its surrogate pair.
    const detail = `a\ufffeb\uffffc\u0000d\ud800e${'x'.repeat(490)}😀`;
    const sent = letter({ detail, tenant: 'acme', errorName: 'Error\ufffe' });
    const failed = await new DeadLetterQueue(sqs, dlqUrl).send([sent]);
    expect([...failed]).toEqual([]);
    const [received] = await receiveAll(dlqUrl);
    const value = attr(received!, 'detail')!;
    expect(value.startsWith('a\\ufffeb\\uffffc\\u0000d\\ud800e')).toBe(true);
    expect(value).not.toMatch(/[\ufffe\uffff]/);
    expect(value).not.toContain('\u0000');
    expect(attr(received!, 'errorName')).toBe('Error\\ufffe');
  });
});

describe('DeadLetterQueue sizes batches by what it sends', () => {
  it('keeps each SendMessageBatch under 256 KiB when escaped attributes are large', async () => {
    const dlqUrl = await createQueue(false);
    const requests: number[] = [];
    const recording = new SQSClient(localClientConfig('sqs'));
    recording.middlewareStack.add(
      (next) => async (args) => {
        const input = (
          args.input as { Entries?: Array<{ MessageBody?: string; MessageAttributes?: object }> }
        ).Entries;
        if (input !== undefined) {
          requests.push(
            input.reduce(
              (sum, e) => sum + Buffer.byteLength(JSON.stringify([e.MessageBody, e.MessageAttributes])),
              0,
            ),
          );
        }
        return next(args);
      },
      { step: 'initialize' },
    );
    try {
      // 10 bodies of 24,000 bytes plus 500 U+FFFE escaped to 3,000 bytes each: one batch would be ~270 KB.
      const letters = Array.from({ length: 10 }, () =>
        letter({ body: 'b'.repeat(24_000), detail: '\ufffe'.repeat(500) }),
      );
      const failed = await new DeadLetterQueue(recording, dlqUrl).send(letters);
      expect([...failed]).toEqual([]);
      expect(requests.length).toBeGreaterThan(1);
      for (const bytes of requests) expect(bytes).toBeLessThanOrEqual(262_144);
      expect(await receiveAll(dlqUrl)).toHaveLength(10);
    } finally {
      recording.destroy();
    }
  });
});
