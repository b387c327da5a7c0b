import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** A tenant-bound producer of the local pipeline: its name and the tenants its queue may write. */
export interface LocalProducer {
  /** Names its queue (`s3-ingest-local-<name>`). */
  readonly name: string;
  /** Exact tenant names or prefix patterns (`acme-*`), as in `cdk.json` `producers`. */
  readonly tenants: readonly string[];
}

/** A producer's queue, provisioned. */
export interface ProducerQueue {
  readonly producer: LocalProducer;
  readonly queueUrl: string;
  readonly queueArn: string;
}

export interface ProducerQueueSettings {
  readonly dlqArn: string;
  readonly maxReceiveCount: number;
  readonly visibilityTimeoutSeconds: number;
  readonly fifo: boolean;
}

/**
 * Creates a producer's queue the way the stack does: redriving to the shared DLQ, FIFO when the pipeline
 * is. (There is no IAM locally: nothing stops a local sender from using any queue, which is what the
 * demo's cross-tenant probe does; the function's binding refuses it.)
 */
export async function createProducerQueue(
  sqs: SQSClient,
  producer: LocalProducer,
  settings: ProducerQueueSettings,
): Promise<ProducerQueue> {
  const name = `s3-ingest-local-${producer.name}${settings.fifo ? '.fifo' : ''}`;
  const created = settings.fifo
    ? { Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'false' } }
    : {};
  const { QueueUrl: queueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, ...created }));
  if (queueUrl === undefined) throw new Error(`CreateQueue returned no QueueUrl for ${name}`);
  await sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: queueUrl,
      Attributes: {
        VisibilityTimeout: String(settings.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: settings.dlqArn,
          maxReceiveCount: settings.maxReceiveCount,
        }),
      },
    }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const queueArn = Attributes?.QueueArn;
  if (queueArn === undefined) throw new Error(`GetQueueAttributes returned no QueueArn for ${queueUrl}`);
  return { producer, queueUrl, queueArn };
}

/** The function's `SOURCE_TENANTS` for these queues. */
export function sourceTenantsOf(queues: readonly ProducerQueue[]): string {
  return JSON.stringify(Object.fromEntries(queues.map((q) => [q.queueArn, q.producer.tenants])));
}
