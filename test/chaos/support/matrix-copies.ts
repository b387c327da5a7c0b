// The deferred copies a fault-matrix invocation left in the run's own queue: waited for past their delay
// (`DelaySeconds`, 1 s and up), taken out of the queue, and handed back as records of the next invocation,
// as Lambda's poller would deliver them.
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { DEFERRAL_POLICY } from '../../../lib/ingest/handler/settle/defer-out-of-turn.js';
import { toSqsRecord } from '../../../lib/local/lambda/sqs-event.js';

/** Messages in the queue, visible or still delayed. */
async function queued(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return (
    Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0)
  );
}

/**
 * Every message in `queueUrl` (the deferred copies: the matrix sends nothing else there) as Lambda
 * records of `queueArn`, once none is left visible or delayed; each is deleted from the queue (the runner
 * redelivers what the handler does not acknowledge). Rejects when copies are still delayed past the
 * longest deferral delay.
 */
export async function collectCopies(
  sqs: SQSClient,
  queueUrl: string,
  queueArn: string,
): Promise<SQSRecord[]> {
  const copies: SQSRecord[] = [];
  const giveUpAt = Date.now() + (DEFERRAL_POLICY.maxDelaySeconds + 5) * 1000;
  while ((await queued(sqs, queueUrl)) > 0) {
    if (Date.now() > giveUpAt)
      throw new Error(`${queueUrl}: copies still delayed after ${DEFERRAL_POLICY.maxDelaySeconds + 5} s`);
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        // A delayed copy becomes visible within its whole seconds: a short long-poll waits for it.
        WaitTimeSeconds: 1,
        VisibilityTimeout: 60,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) continue;
    copies.push(...messages.map((m) => toSqsRecord(m, { eventSourceARN: queueArn, awsRegion: 'us-east-1' })));
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return copies;
}
