import {
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { usingEmbeddedAws } from '../../support/local-aws.js';
import { testSqs } from './sqs-queue.js';

const { sqs, queue } = testSqs();

/** Receives (and hands back at once) until the redrive policy (maxReceiveCount 1) moved everything. */
async function exhaust(url: string): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
    );
    if (Messages.length === 0) return;
  }
}

async function receiveAll(url: string, names: string[]): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 30,
      MessageSystemAttributeNames: names as never,
    }),
  );
  return Messages;
}

describe.runIf(usingEmbeddedAws())('embedded SQS: DeadLetterQueueSourceArn', () => {
  it('names the queue a moved message came from, and is absent on a message sent to the DLQ itself', async () => {
    const dlq = await queue('src-dlq');
    const redrive = { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }) };
    const alpha = await queue('src-alpha', redrive);
    const beta = await queue('src-beta', redrive);
    const fromAlpha = await sqs.send(new SendMessageCommand({ QueueUrl: alpha.url, MessageBody: 'a' }));
    const fromBeta = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: beta.url, Entries: [{ Id: '0', MessageBody: 'b' }] }),
    );
    const direct = await sqs.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: 'd' }));
    await exhaust(alpha.url);
    await exhaust(beta.url);

    const letters = await receiveAll(dlq.url, ['All']);
    const sourceOf = new Map(letters.map((m) => [m.MessageId, m.Attributes?.DeadLetterQueueSourceArn]));
    expect(sourceOf).toEqual(
      new Map([
        [fromAlpha.MessageId, alpha.arn],
        [fromBeta.Successful?.[0]?.MessageId, beta.arn],
        [direct.MessageId, undefined],
      ]),
    );
    // Moved, not copied: the letter keeps its id and first SentTimestamp.
    for (const m of letters) expect(Number(m.Attributes?.SentTimestamp)).toBeGreaterThan(0);
  });

  it('is returned only when asked for (by name or All)', async () => {
    const dlq = await queue('src-dlq');
    const source = await queue('src-only', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: source.url, MessageBody: 'x' }));
    await exhaust(source.url);
    const [unasked] = await receiveAll(dlq.url, ['SentTimestamp']);
    expect(unasked?.Attributes).toEqual({ SentTimestamp: expect.any(String) });
    await sqs.send(new SendMessageCommand({ QueueUrl: source.url, MessageBody: 'y' }));
    await exhaust(source.url);
    const [asked] = await receiveAll(dlq.url, ['DeadLetterQueueSourceArn']);
    expect(asked?.Attributes).toEqual({ DeadLetterQueueSourceArn: source.arn });
  });
});
