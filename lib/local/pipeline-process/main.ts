// A child-process entry running one "fleet" of the pipeline: the local SQS event-source runner invoking the
// real ingest handler (one Lambda container per concurrent invocation) against the endpoints given in the
// environment. Fault-injection tests SIGKILL it mid-run and start a fresh one, as Lambda loses sandboxes.
//
//   node --import tsx lib/local/pipeline-process/main.ts --queue-url URL --log FILE [options]
//
// The handler reads its usual environment (loadConfig) and books its tenant prefixes' slots in their rate
// schedules (the handler's own DynamoDB budgets on SEMAPHORE_TABLE). Every booking, decrease followed,
// report, S3 write started outside a booking and invocation is appended to the NDJSON log FILE (see
// pipeline-process/event-log.ts). SIGTERM stops gracefully and exits 0.

import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createS3Client } from '../../db/s3-client.js';
import { loadConfig } from '../../ingest/config.js';
import { createIngestHandler, type InvocationSummary } from '../../ingest/handler/ingest-handler.js';
import { dynamoRateBudgets } from '../../ingest/handler/run/prefix-budgets.js';
import { SMALL_TENANTS } from '../../ingest/handler/run/prefix-rates.js';
import { EventSourceRunner } from '../lambda/event-source-runner.js';
import { type ContainerHandler, LambdaContainers } from '../lambda/lambda-containers.js';
import { SilentMetrics } from '../lambda/silent-metrics.js';
import { EventLog } from './event-log.js';
import { InFlightGauge } from './in-flight-gauge.js';
import { ContainerBookings, loggedBudgets, watchBookedWrites } from './logged-budgets.js';
import { parsePipelineProcessArgs } from './options.js';

interface ContainerState {
  readonly index: number;
  readonly gauge: InFlightGauge;
  summary?: InvocationSummary | undefined;
  redelivered: number;
}

async function main(): Promise<void> {
  const options = parsePipelineProcessArgs(process.argv.slice(2));
  const config = loadConfig(process.env);
  if (config.semaphoreTable === undefined) throw new Error('SEMAPHORE_TABLE is required here');
  const tableName = config.semaphoreTable;
  const log = new EventLog(options.logFile);
  const region = config.region ?? 'us-east-1';
  const dynamodb = new DynamoDBClient({ region, endpoint: config.endpoints.dynamodb });
  const sqs = new SQSClient({ region, endpoint: config.endpoints.sqs });
  // How late this process may start what its timers schedule: the rate check's skew (test/chaos).
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  /** Per container: what the runner's `invocation` event is joined with (one invocation at a time each). */
  const containerOf = new Map<string, ContainerState>();
  let containerCount = 0;
  const containers = new LambdaContainers((): ContainerHandler => {
    const index = containerCount++;
    const bookings = new ContainerBookings(log, index);
    // A prefix with a holder (booked in this invocation) within its pool; an unbooked one (a tenant with
    // fewer than SMALL_TENANTS.writes writes in the batch) within its writes.
    const gauge = new InFlightGauge((name) =>
      bookings.holding(name) ? config.poolConcurrency : SMALL_TENANTS.writes - 1,
    );
    const s3 = createS3Client({
      region,
      ...(config.endpoints.s3 === undefined ? {} : { endpoint: config.endpoints.s3 }),
      forcePathStyle: config.s3ForcePathStyle,
      maxSockets: config.poolConcurrency,
    });
    gauge.attach(s3);
    watchBookedWrites(s3, bookings);
    const state: ContainerState = { index, gauge, redelivered: 0 };
    const handler = createIngestHandler(config, {
      clients: { s3, sqs, dynamodb },
      // Level from POWERTOOLS_LOG_LEVEL (spawnPipelineProcess defaults it to ERROR).
      logger: new Logger({ serviceName: 's3-ingest-chaos' }),
      // Published (dropped) after every invocation, so samples never pile up into a mid-run flush.
      metrics: new SilentMetrics({ namespace: 's3-ingest-chaos', serviceName: 's3-ingest-chaos' }),
      // The handler's own budgets, logged: every booking of a tenant prefix's slots in its schedule.
      budgets: loggedBudgets(dynamoRateBudgets(config, dynamodb, tableName), bookings),
      onInvocation: (summary) => {
        state.summary = summary;
      },
    });
    const invoke: ContainerHandler = async (event, context) => {
      containerOf.set(context.awsRequestId, state);
      state.summary = undefined;
      state.redelivered = event.Records.filter(
        (r) => Number(r.attributes.ApproximateReceiveCount) > 1,
      ).length;
      gauge.takePeaks();
      try {
        return await handler(event, context);
      } finally {
        bookings.endInvocation();
      }
    };
    invoke.close = async () => {
      await handler.close();
      s3.destroy();
    };
    return invoke;
  });

  const runner = new EventSourceRunner({
    client: sqs,
    queueUrl: options.queueUrl,
    handler: containers.invoke,
    batchSize: options.batchSize,
    maximumBatchingWindowMs: options.batchingWindowMs,
    maxConcurrency: options.concurrency,
    functionTimeoutMs: options.functionTimeoutMs,
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
    waitTimeSeconds: options.waitTimeSeconds,
    functionName: 's3-ingest-chaos',
  });
  runner.on('invocation', (result) => {
    const state = containerOf.get(result.requestId);
    containerOf.delete(result.requestId);
    const summary = state?.summary;
    log.write({
      event: 'invocation',
      container: state?.index ?? -1,
      records: result.messageIds.length,
      deleted: result.deleted,
      failed: result.failedMessageIds.length,
      outcome: result.outcome,
      ...(state?.gauge.takePeaks() ?? { peakInFlight: 0, peakOverBound: 0, peakOverBoundAt: '' }),
      redelivered: state?.redelivered ?? 0,
      deadLettered: summary?.RecordsDeadLettered ?? 0,
      retries: summary?.Retries ?? 0,
      throttles: summary?.S3SlowDowns ?? 0,
      timeouts: summary?.Timeouts ?? 0,
      loopStallMs: Math.round(loopDelay.max / 1e6),
    });
    loopDelay.reset();
  });

  let stopping = false;
  process.once('SIGTERM', () => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      await runner.stop();
      await containers.close();
      log.write({ event: 'stopped' });
      log.close();
      sqs.destroy();
      dynamodb.destroy();
    })().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`stop failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });

  await runner.start();
  log.write({ event: 'ready' });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
