// bench:cpu's SQS step, in a child process: the local pipeline's SQS traffic per message (the producer's
// SendMessageBatch, the event-source runner's ReceiveMessage and DeleteMessageBatch, with the abort signal
// both pass), through the embedded stack in this process, client and emulator CPU together. The SQS client
// `startLocalPipeline` uses (`createLocalSqsClient`) and the SDK's default client take turns on one queue in
// blocks of BLOCK messages, so both see the same load on the machine; per block, the ratio of the two.
// Usage: sqs-traffic.ts <blocks>
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { startLocalAws } from '../../lib/local/emulators/local-aws.js';
import { provisionLocal } from '../../lib/local/emulators/provision.js';
import { createLocalSqsClient } from '../../lib/local/lambda/local-sqs-client.js';
import { reportToParent } from '../support/child.js';

const BLOCK = 500;
const blocks = Number(process.argv[2] ?? 12);

export interface SqsTrafficResult {
  /** CPU µs per message of each block, by client. */
  localClientUs: number[];
  sdkDefaultUs: number[];
}

const aws = await startLocalAws();
const { queueUrl } = await provisionLocal({
  endpoints: aws.emulatorEndpoints,
  maxReceiveCount: 5,
  visibilityTimeoutSeconds: 30,
  fifo: false,
});
const clients: [keyof SqsTrafficResult, SQSClient][] = [
  ['localClientUs', createLocalSqsClient(aws.clientConfig.sqs)],
  ['sdkDefaultUs', new SQSClient(aws.clientConfig.sqs)],
];
const abort = new AbortController();
// A demo write's size.
const body = JSON.stringify({
  v: 1,
  tenant: 'tenant-07',
  resource: 'orders',
  op: 'upsert',
  id: 'o-123456',
  data: { label: 'x'.repeat(60), qty: 3, price: 12.5 },
});

async function block(sqs: SQSClient): Promise<void> {
  for (let i = 0; i < BLOCK; i += 10) {
    const Entries = Array.from({ length: 10 }, (_, j) => ({ Id: String(j), MessageBody: body }));
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries }), {
      abortSignal: abort.signal,
    });
  }
  for (let received = 0; received < BLOCK; ) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 30,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: abort.signal },
    );
    received += Messages.length;
    if (Messages.length === 0) continue;
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
}

for (const [, client] of clients) await block(client); // warm-up, not measured
const result: SqsTrafficResult = { localClientUs: [], sdkDefaultUs: [] };
for (let i = 0; i < blocks; i++) {
  for (const [name, client] of i % 2 === 0 ? clients : [...clients].reverse()) {
    const before = process.cpuUsage();
    await block(client);
    const used = process.cpuUsage(before);
    result[name].push((used.user + used.system) / BLOCK);
  }
}
for (const [, client] of clients) client.destroy();
await aws.stop();
reportToParent(result);
