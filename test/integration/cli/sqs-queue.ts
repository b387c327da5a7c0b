import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll } from 'vitest';
import { localClientConfig } from '../../support/local-aws.js';

/** A new queue named `<prefix>-<random>`, with its URL and ARN. */
export async function createQueue(
  sqs: SQSClient,
  prefix: string,
  attributes: Record<string, string> = {},
): Promise<{ url: string; arn: string }> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `${prefix}-${randomUUID().slice(0, 8)}`, Attributes: attributes }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

/** An SQS client on the run's endpoint, destroyed after the file's tests, and a `createQueue` bound to it. */
export function testSqs(): {
  sqs: SQSClient;
  queue: (prefix: string, attributes?: Record<string, string>) => Promise<{ url: string; arn: string }>;
} {
  const sqs = new SQSClient(localClientConfig('sqs'));
  afterAll(() => {
    sqs.destroy();
  });
  return { sqs, queue: (prefix, attributes = {}) => createQueue(sqs, prefix, attributes) };
}
