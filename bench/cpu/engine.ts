// One bench:cpu measurement (a child of bench/cpu.ts): the real handler (createIngestHandler) in this
// process, the embedded AWS stack in another (./emulators.ts), the demo load cut into Lambda batches and
// handed to `concurrency` handler containers round by round, as `npm start` does without the SQS polling.
// Args: messages tenants batchSize concurrency. Reports CPU per message of both processes and of the plan
// stage alone.

import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { loadConfig } from '../../lib/ingest/config.js';
import { createIngestHandler, type IngestHandler } from '../../lib/ingest/handler/ingest-handler.js';
import { planBatch } from '../../lib/ingest/handler/plan/plan-batch.js';
import { encodeWrite } from '../../lib/ingest/message/encode.js';
import { DEMO_RESOURCES, generateDemoLoad } from '../../lib/local/demo/demo-load.js';
import { SilentMetrics } from '../../lib/local/lambda/silent-metrics.js';
import { reportToParent } from '../support/child.js';
import { startEmulatorProcess } from './emulators.js';

export interface CpuEngineResult {
  messages: number;
  invocations: number;
  wallMs: number;
  /** This process (the handler, its SDK clients and pools), ms of user + system CPU. */
  handlerCpuMs: number;
  /** The emulator process over the same window. */
  emulatorCpuMs: number;
  /** planBatch over the same batches, alone (parse, validate, group), ms. */
  planCpuMs: number;
  failedRecords: number;
}

const [messages, tenants, batchSize, concurrency] = process.argv.slice(2).map(Number) as [
  number,
  number,
  number,
  number,
];

const cpuMs = () => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
};

const emulators = await startEmulatorProcess();
try {
  for (const [key, value] of Object.entries(emulators.env)) process.env[key] = value;
  const config = loadConfig({
    ...emulators.env,
    RESOURCES: JSON.stringify(DEMO_RESOURCES),
    DEADLINE_MARGIN_MS: '2000',
    WRITE_TIMEOUT_MS: '2000',
  });
  const containers: IngestHandler[] = Array.from({ length: concurrency }, () =>
    createIngestHandler(config, {
      logger: new Logger({ serviceName: 'bench-cpu', logLevel: 'ERROR' }),
      metrics: new SilentMetrics({ namespace: 'bench-cpu', serviceName: 'bench-cpu' }),
    }),
  );
  const load = generateDemoLoad({ tenants, messages, badRatio: 0, seed: 1 });
  let seq = 1;
  let id = 0;
  const now = Date.now();
  // Each round's writes as Lambda batches; the demo drains a round before sending the next.
  const rounds = load.rounds.map((round) => {
    const records = round.writes.map((write): SQSRecord => {
      const { body } = encodeWrite({ ...write, seq: seq++ }, { resources: DEMO_RESOURCES });
      const messageId = `m-${id++}`;
      return {
        messageId,
        receiptHandle: messageId,
        body,
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: String(now),
          SenderId: 'bench-cpu',
          ApproximateFirstReceiveTimestamp: String(now),
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:s3-ingest-local-ingest',
        awsRegion: 'us-east-1',
      };
    });
    const batches: SQSRecord[][] = [];
    for (let at = 0; at < records.length; at += batchSize) batches.push(records.slice(at, at + batchSize));
    return batches;
  });
  const context = {
    functionName: 'bench-cpu',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:bench-cpu',
    memoryLimitInMB: '1024',
    awsRequestId: 'bench-cpu',
    logGroupName: 'bench-cpu',
    logStreamName: 'bench-cpu',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 60_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };

  let invocations = 0;
  let failedRecords = 0;
  const started = performance.now();
  const handlerBefore = cpuMs();
  const emulatorBefore = emulators.cpuMs();
  for (const batches of rounds) {
    let next = 0;
    await Promise.all(
      containers.map(async (handler) => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          const response = await handler({ Records: batch }, context);
          invocations++;
          failedRecords += response.batchItemFailures.length;
        }
      }),
    );
  }
  const handlerCpuMs = cpuMs() - handlerBefore;
  const emulatorCpuMs = emulators.cpuMs() - emulatorBefore;
  const wallMs = performance.now() - started;

  const planBefore = cpuMs();
  for (const batches of rounds) for (const batch of batches) planBatch(batch, config.resources);
  const planCpuMs = cpuMs() - planBefore;

  await Promise.all(containers.map((handler) => handler.close()));
  reportToParent<CpuEngineResult>({
    messages: rounds.flat(2).length,
    invocations,
    wallMs,
    handlerCpuMs,
    emulatorCpuMs,
    planCpuMs,
    failedRecords,
  });
} finally {
  emulators.stop();
}
// The SDK clients' keep-alive sockets to the killed emulators would hold the process open.
process.exit(0);
