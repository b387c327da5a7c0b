// A small pipeline on the embedded stack for the `dlq redrive` tests: producer queues sharing one DLQ (which
// is also the function's DLQ_URL, as `s3-ingest local` runs it), the real handler, and a step that delivers
// what is in a queue as Lambda would (acknowledged records deleted, failed ones handed back).
import { randomUUID } from 'node:crypto';
import { S3Client } from '@aws-sdk/client-s3';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Database } from '../../../lib/db/database.js';
import { RecordNotFoundError } from '../../../lib/db/errors.js';
import { S3ObjectStore } from '../../../lib/db/s3-object-store.js';
import { createIngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import {
  createProducerQueue,
  type ProducerQueue,
  sourceTenantsOf,
} from '../../../lib/local/lambda/producer-queues.js';
import { createLambdaContext, toSqsRecord } from '../../../lib/local/lambda/sqs-event.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { quietMetrics, silentLogger } from '../../unit/ingest/handler/support.js';
import { stackConfig } from '../ingest/emulated-stack.js';

export interface RedrivePipeline {
  readonly bucket: string;
  readonly dlqUrl: string;
  readonly queues: Record<string, ProducerQueue>;
  /** Sends `body` to `producer`'s queue; resolves the message id. */
  send(producer: string, body: string): Promise<string>;
  /**
   * Receives what `producer`'s queue holds now and runs it through the handler once; `ackLost`: the
   * handler's answer never reaches SQS (every message is handed back, as after a timeout).
   */
  deliver(producer: string, options?: { ackLost?: boolean }): Promise<void>;
  /** Receives without acknowledging until the redrive policy (maxReceiveCount 1) moved everything to the DLQ. */
  exhaust(producer: string): Promise<void>;
  /** A record's own fields (no id, timestamps or version), or undefined when it does not exist. */
  record(tenant: string, id: string): Promise<Record<string, unknown> | undefined>;
  /** How many `orders` records `tenant` has. */
  count(tenant: string): Promise<number>;
  close(): void;
}

const ALL = { MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All' as const] };

/** Producers named by their tenants (each may write exactly its own tenant), one DLQ, `orders` resource. */
export async function redrivePipeline(
  sqs: SQSClient,
  producers: readonly string[],
): Promise<RedrivePipeline> {
  const name = `redrive-${randomUUID().slice(0, 8)}`;
  const resources = await provisionLocal({
    endpoints: localAwsEndpoints(),
    bucket: name,
    queueName: `${name}-ingest`,
    tableName: `${name}-semaphore`,
    maxReceiveCount: 1,
  });
  const queues: Record<string, ProducerQueue> = {};
  for (const producer of producers) {
    queues[producer] = await createProducerQueue(
      sqs,
      { name: `${name}-${producer}`, tenants: [producer] },
      { fifo: false, dlqArn: resources.dlqArn, maxReceiveCount: 1, visibilityTimeoutSeconds: 30 },
    );
  }
  const handler = createIngestHandler(
    stackConfig(resources, {
      SOURCE_TENANTS: sourceTenantsOf(Object.values(queues)),
      WRITE_TIMEOUT_MS: '1000',
    }),
    { logger: silentLogger(), metrics: quietMetrics() },
  );
  const s3 = new S3Client(localClientConfig('s3'));
  const orders = (tenant: string) =>
    new Database({ tenant, store: new S3ObjectStore(s3, resources.bucket) }).createResource({
      name: 'orders',
    });
  const queueOf = (producer: string): ProducerQueue => {
    const q = queues[producer];
    if (q === undefined) throw new Error(`no producer ${producer}`);
    return q;
  };
  const receive = async (queueUrl: string, visibility: number): Promise<Message[]> => {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: visibility,
        WaitTimeSeconds: visibility === 0 ? 0 : 1,
        ...ALL,
      }),
    );
    return Messages;
  };
  return {
    bucket: resources.bucket,
    dlqUrl: resources.dlqUrl,
    queues,
    async send(producer, body) {
      const out = await sqs.send(
        new SendMessageCommand({ QueueUrl: queueOf(producer).queueUrl, MessageBody: body }),
      );
      return out.MessageId ?? '';
    },
    async deliver(producer, options = {}) {
      const { queueUrl, queueArn } = queueOf(producer);
      const messages = await receive(queueUrl, 30);
      if (messages.length === 0) return;
      const records = messages.map((m) =>
        toSqsRecord(m, { eventSourceARN: queueArn, awsRegion: 'us-east-1' }),
      );
      const context = createLambdaContext({
        functionName: 'redrive-test',
        memoryLimitInMB: 512,
        region: 'us-east-1',
        deadline: Date.now() + 20_000,
      });
      const response = await handler({ Records: records }, context);
      const failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      if (options.ackLost) for (const m of messages) failed.add(m.MessageId ?? '');
      const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
      const back = messages.filter((m) => failed.has(m.MessageId ?? ''));
      const entries = (list: Message[]) =>
        list.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle }));
      if (done.length > 0)
        await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(done) }));
      if (back.length > 0)
        await sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: entries(back).map((e) => ({ ...e, VisibilityTimeout: 0 })),
          }),
        );
    },
    async exhaust(producer) {
      for (let round = 0; round < 10; round++) {
        if ((await receive(queueOf(producer).queueUrl, 0)).length === 0) return;
      }
    },
    async record(tenant, id) {
      try {
        const {
          id: _i,
          createdAt: _c,
          updatedAt: _u,
          version: _v,
          ...rest
        } = await (await orders(tenant)).get(id);
        return rest;
      } catch (error) {
        if (error instanceof RecordNotFoundError) return undefined;
        throw error;
      }
    },
    async count(tenant) {
      return (await orders(tenant)).count();
    },
    close() {
      s3.destroy();
    },
  };
}
