import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { localClientConfig } from './local-aws.js';

export function sqsClient(): SQSClient {
  return new SQSClient(localClientConfig('sqs'));
}

export interface TestQueues {
  queueUrl: string;
  dlqUrl: string;
}

/** A fresh queue and DLQ (redrive after `maxReceiveCount` receives) so tests never share messages. */
export async function createQueues(client: SQSClient, maxReceiveCount = 3): Promise<TestQueues> {
  const name = `runner-${randomUUID().slice(0, 8)}`;
  const dlq = await client.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqUrl = dlq.QueueUrl!;
  const arn = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
  );
  const queue = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: '1',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn.Attributes!.QueueArn, maxReceiveCount }),
      },
    }),
  );
  return { queueUrl: queue.QueueUrl!, dlqUrl };
}

/** Sends bodies in batches of 10; returns the message ids in send order. */
export async function sendBodies(
  client: SQSClient,
  queueUrl: string,
  bodies: string[],
  extra: Omit<SendMessageBatchRequestEntry, 'Id' | 'MessageBody'> = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < bodies.length; i += 10) {
    const entries = bodies
      .slice(i, i + 10)
      .map((MessageBody, j) => ({ Id: String(j), MessageBody, ...extra }));
    const res = await client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    if ((res.Failed ?? []).length > 0) throw new Error(`send failed: ${JSON.stringify(res.Failed)}`);
    const byId = new Map((res.Successful ?? []).map((s) => [s.Id, s.MessageId!]));
    for (const e of entries) ids.push(byId.get(e.Id)!);
  }
  return ids;
}

/** Receives until the queue returns nothing (short polls); for reading a DLQ at the end of a test. */
export async function drain(client: SQSClient, queueUrl: string): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const res = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 60,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (!res.Messages?.length) return all;
    all.push(...res.Messages);
  }
}
