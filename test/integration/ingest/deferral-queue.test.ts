// SqsDeferrals on the local emulator (fauxqs): a deferred copy is a new message in the record's own queue,
// invisible until its delay has passed, carrying the body, the producer's attributes, its origin and count.
import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFERRAL_ATTRIBUTES } from '../../../lib/ingest/handler/settle/deferral-port.js';
import { SqsDeferrals } from '../../../lib/ingest/handler/settle/deferral-queue.js';
import { toSqsRecord } from '../../../lib/local/lambda/sqs-event.js';
import { localClientConfig } from '../../support/local-aws.js';

const sqs = new SQSClient(localClientConfig('sqs'));
afterAll(() => sqs.destroy());

async function createQueue(): Promise<{ url: string; arn: string }> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `defer-${randomUUID().slice(0, 8)}` }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

/** One message, received with every attribute and deleted (acknowledged), or undefined after `waitSeconds`. */
async function receiveOne(queueUrl: string, waitSeconds: number): Promise<Message | undefined> {
  const { Messages } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 1,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  const message = Messages?.[0];
  if (message !== undefined)
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle! }));
  return message;
}

/** Long-polls until a message arrives (each poll ends as soon as one does), for at most `limitMs`. */
async function awaitMessage(queueUrl: string, limitMs: number): Promise<Message> {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    const message = await receiveOne(queueUrl, 1);
    if (message !== undefined) return message;
  }
  throw new Error(`no message in ${queueUrl} within ${limitMs} ms`);
}

describe('SqsDeferrals on the local emulator', () => {
  it('re-sends a record to its own queue, visible only after its delay, with body, attributes, origin and count', async () => {
    const queue = await createQueue();
    const body = '{"v":1,"tenant":"acme","resource":"orders","op":"upsert","id":"o-1","data":{"s":"ü €"}}';
    const blob = Buffer.from([0, 1, 2, 250, 255]);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: body,
        MessageAttributes: {
          trace: { DataType: 'String', StringValue: 'trace-1' },
          weight: { DataType: 'Number.int', StringValue: '7' },
          blob: { DataType: 'Binary', BinaryValue: blob },
        },
      }),
    );
    const original = await awaitMessage(queue.url, 5_000);
    const source = { eventSourceARN: queue.arn, awsRegion: 'us-east-1' };
    const deferrals = new SqsDeferrals(sqs);

    const deferredAt = Date.now();
    const notDeferred = await deferrals.defer([{ record: toSqsRecord(original, source), delaySeconds: 2 }], {
      signal: AbortSignal.timeout(5_000),
    });
    expect([...notDeferred]).toEqual([]);
    expect(await receiveOne(queue.url, 0)).toBeUndefined();
    const copy = await awaitMessage(queue.url, 8_000);
    expect(Date.now() - deferredAt).toBeGreaterThanOrEqual(1_950);

    expect(copy.MessageId).not.toBe(original.MessageId);
    expect(copy.Body).toBe(body);
    expect(copy.Attributes?.ApproximateReceiveCount).toBe('1');
    const attributes = copy.MessageAttributes!;
    expect(attributes.trace).toMatchObject({ DataType: 'String', StringValue: 'trace-1' });
    expect(attributes.weight).toMatchObject({ DataType: 'Number.int', StringValue: '7' });
    expect(attributes.blob?.DataType).toBe('Binary');
    expect(Buffer.from(attributes.blob!.BinaryValue!)).toEqual(blob);
    expect(attributes[DEFERRAL_ATTRIBUTES.origin]).toMatchObject({
      DataType: 'String',
      StringValue: original.MessageId,
    });
    expect(attributes[DEFERRAL_ATTRIBUTES.deferrals]).toMatchObject({ DataType: 'Number', StringValue: '1' });

    // The copy deferred again (no delay): still keyed by the first message, counted twice.
    const again = await deferrals.defer([{ record: toSqsRecord(copy, source), delaySeconds: 0 }], {
      signal: AbortSignal.timeout(5_000),
    });
    expect([...again]).toEqual([]);
    const second = await awaitMessage(queue.url, 5_000);
    expect(second.Body).toBe(body);
    expect(second.MessageAttributes?.[DEFERRAL_ATTRIBUTES.origin]?.StringValue).toBe(original.MessageId);
    expect(second.MessageAttributes?.[DEFERRAL_ATTRIBUTES.deferrals]?.StringValue).toBe('2');
    expect(second.MessageAttributes?.trace?.StringValue).toBe('trace-1');
  });
});
