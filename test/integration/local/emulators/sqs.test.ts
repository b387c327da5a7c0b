import { randomUUID } from 'node:crypto';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { localClientConfig } from '../../../support/local-aws.js';

// Every SQS call the project makes, through the real SDK v3 client against the run's SQS endpoint.
describe('SQS calls against the local stack', () => {
  const sqs = new SQSClient(localClientConfig('sqs'));
  afterAll(() => sqs.destroy());

  const createQueue = async (suffix: string, attributes?: Record<string, string>) => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: `it-${suffix}-${randomUUID().slice(0, 8)}`,
        Attributes: attributes,
      }),
    );
    return QueueUrl!;
  };
  const queueArn = async (queueUrl: string) => {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    return Attributes!.QueueArn!;
  };
  const receive = (queueUrl: string, max = 10, waitSeconds = 0) =>
    sqs
      .send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitSeconds,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          MessageAttributeNames: ['All'],
        }),
      )
      .then((r) => r.Messages ?? []);

  it('sends one and a batch, receives them with attributes and deletes one and a batch', async () => {
    const queueUrl = await createQueue('basic');
    const sent = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify({ v: 1, tenant: 'acme' }),
        MessageAttributes: { reason: { DataType: 'String', StringValue: 'hello' } },
      }),
    );
    expect(sent.MessageId).toBeTruthy();
    const batch = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: ['a', 'b', 'c'].map((id) => ({ Id: id, MessageBody: JSON.stringify({ id }) })),
      }),
    );
    expect(batch.Successful?.map((s) => s.Id).sort()).toEqual(['a', 'b', 'c']);
    expect(batch.Failed ?? []).toEqual([]);

    const messages: Awaited<ReturnType<typeof receive>> = [];
    while (messages.length < 4) {
      const got = await receive(queueUrl, 10, 1);
      expect(got.length).toBeGreaterThan(0);
      messages.push(...got);
    }
    const single = messages.find((m) => m.MessageId === sent.MessageId)!;
    expect(single.MessageAttributes?.reason?.StringValue).toBe('hello');
    expect(single.Attributes?.ApproximateReceiveCount).toBe('1');

    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: single.ReceiptHandle! }));
    const rest = messages.filter((m) => m !== single);
    const deleted = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: rest.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
    expect(deleted.Successful).toHaveLength(3);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
  });

  it('hides a received message until ChangeMessageVisibility makes it visible again', async () => {
    const queueUrl = await createQueue('visibility', { VisibilityTimeout: '30' });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x' }));
    const [first] = await receive(queueUrl, 1, 1);
    expect(first).toBeDefined();
    expect(await receive(queueUrl)).toEqual([]);
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: first!.ReceiptHandle!,
        VisibilityTimeout: 0,
      }),
    );
    const [again] = await receive(queueUrl, 1, 1);
    expect(again?.MessageId).toBe(first!.MessageId);
    expect(again?.Attributes?.ApproximateReceiveCount).toBe('2');
  });

  it('moves a message to the DLQ after maxReceiveCount receives (redrive set with SetQueueAttributes)', async () => {
    const dlqUrl = await createQueue('dlq');
    const queueUrl = await createQueue('redrive');
    const dlqArn = await queueArn(dlqUrl);
    await sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: queueUrl,
        Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 }) },
      }),
    );
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['RedrivePolicy'] }),
    );
    expect(JSON.parse(Attributes!.RedrivePolicy!)).toMatchObject({ deadLetterTargetArn: dlqArn });
    const { MessageId } = await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'poison' }),
    );

    // Two failed receives: each time the consumer gives the message back at once (as a failed batch item is).
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [message] = await receive(queueUrl, 1, 1);
      expect(message?.MessageId).toBe(MessageId);
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: message!.ReceiptHandle!,
          VisibilityTimeout: 0,
        }),
      );
    }
    // The third receive finds it over the limit: SQS moves it to the DLQ instead of delivering it.
    expect(await receive(queueUrl, 1, 1)).toEqual([]);
    const [dead] = await receive(dlqUrl, 1, 1);
    expect(dead?.MessageId).toBe(MessageId);
    expect(dead?.Body).toBe('poison');
  });
});
