import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

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
