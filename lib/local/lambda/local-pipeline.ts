import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { SQSClient } from '@aws-sdk/client-sqs';
import { loadConfig } from '../../ingest/config.js';
import { createIngestHandler, type InvocationSummary } from '../../ingest/handler/ingest-handler.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type LocalAws, startLocalAws } from '../emulators/local-aws.js';
import { type LocalResources, provisionLocal } from '../emulators/provision.js';
import {
  EventSourceRunner,
  type EventSourceRunnerStats,
  type InvocationResult,
} from './event-source-runner.js';
import { type ContainerHandler, LambdaContainers } from './lambda-containers.js';
import { SilentMetrics } from './silent-metrics.js';

/** Invocation settings of the local pipeline: short enough that retries of transient failures come back soon. */
export const LOCAL_FUNCTION_TIMEOUT_MS = 8_000;
export const LOCAL_VISIBILITY_TIMEOUT_S = 8;
export const LOCAL_MAX_RECEIVE_COUNT = 5;

export interface LocalPipelineOptions {
  /** The handler's `RESOURCES`: resource name -> JSON Schema (`{}` for schemaless). */
  readonly resources: Readonly<Record<string, unknown>>;
  /**
   * Environment the handler's config is read from, under the stack's own keys (bucket, queues, endpoints).
   * @default {}
   * @example { env: process.env }
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Put the S3 chaos proxy in front of S3, throttling at this many writes per second per prefix (the
   * handler's permits then follow that rate).
   * @default undefined (no proxy)
   * @example { slowdownRate: 3500 }
   */
  readonly slowdownRate?: number;
  /**
   * Records per invocation (above 10, a 500 ms batching window, as Lambda requires one).
   * @default 10
   * @example { batchSize: 100 }
   */
  readonly batchSize?: number;
  /**
   * Concurrent invocations.
   * @default 4
   * @example { concurrency: 1 }
   */
  readonly concurrency?: number;
  /**
   * Print the handler's INFO logs and EMF lines; otherwise its errors only.
   * @default false
   * @example { verbose: true }
   */
  readonly verbose?: boolean;
  /**
   * Called after every invocation with the runner's view (records, deleted, outcome) and, when the handler
   * returned, its summary.
   * @default undefined
   * @example { onInvocation: (result, summary) => console.log(result.outcome, summary?.Writes) }
   */
  readonly onInvocation?: (result: InvocationResult, summary: InvocationSummary | undefined) => void;
}

/** The embedded stack, provisioned, with the event-source runner invoking the real handler. */
export interface LocalPipeline {
  readonly aws: LocalAws;
  readonly resources: LocalResources;
  readonly runner: EventSourceRunner;
  readonly containers: LambdaContainers;
  /** The runner's SQS client (endpoint of the embedded SQS). */
  readonly sqs: SQSClient;
  /** Stops the runner (nothing received is lost), the containers and the stack; resolves with the stats. */
  stop(): Promise<EventSourceRunnerStats>;
}

/**
 * Starts the embedded AWS stack, provisions it like the deployed stack (bucket, queue with its DLQ and
 * redrive, semaphore table) and runs the SQS event-source runner over `LambdaContainers` of the real
 * `createIngestHandler`. `s3-ingest local` runs its demo load on it; `s3-ingest local --serve` keeps it up.
 */
export async function startLocalPipeline(options: LocalPipelineOptions): Promise<LocalPipeline> {
  const { slowdownRate, verbose = false } = options;
  const batchSize = options.batchSize ?? 10;
  const aws = await startLocalAws(
    slowdownRate === undefined
      ? {}
      : { chaos: { writesPerSecond: slowdownRate, latency: { medianMs: 15, p99Ms: 80 } } },
  );
  const sqs = new SQSClient(aws.clientConfig.sqs);
  try {
    const resources = await provisionLocal({
      // Provision the emulators directly: the chaos proxy could throttle or fault the setup itself.
      endpoints: aws.emulatorEndpoints,
      maxReceiveCount: LOCAL_MAX_RECEIVE_COUNT,
      visibilityTimeoutSeconds: LOCAL_VISIBILITY_TIMEOUT_S,
    });
    // The handler's SDK clients resolve credentials from the process (the emulators accept any).
    process.env.AWS_ACCESS_KEY_ID ??= LOCAL_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY ??= LOCAL_CREDENTIALS.secretAccessKey;
    const config = loadConfig({
      ...options.env,
      BUCKET_NAME: resources.bucket,
      DLQ_URL: resources.dlqUrl,
      SEMAPHORE_TABLE: resources.tableName,
      RESOURCES: JSON.stringify(options.resources),
      AWS_REGION: LOCAL_REGION,
      AWS_ENDPOINT_URL_S3: aws.endpoints.s3,
      AWS_ENDPOINT_URL_SQS: aws.endpoints.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: aws.endpoints.dynamodb,
      DEADLINE_MARGIN_MS: '2000',
      WRITE_TIMEOUT_MS: '2000',
      ...(slowdownRate === undefined ? {} : { S3_PREFIX_WRITE_RATE: String(slowdownRate) }),
    });
    // Joins the runner's `invocation` event with the handler's summary (a container runs one at a time).
    const summaries = new Map<string, InvocationSummary>();
    const containers = new LambdaContainers((): ContainerHandler => {
      let requestId = '';
      const handler = createIngestHandler(config, {
        logger: new Logger({ serviceName: 's3-ingest-local', logLevel: verbose ? 'INFO' : 'ERROR' }),
        // Published after every invocation: printed with --verbose, dropped otherwise.
        metrics: new (verbose ? Metrics : SilentMetrics)({
          namespace: 's3-ingest-local',
          serviceName: 's3-ingest-local',
        }),
        onInvocation: (summary) => summaries.set(requestId, summary),
      });
      const invoke: ContainerHandler = (event, context) => {
        requestId = context.awsRequestId;
        return handler(event, context);
      };
      invoke.close = () => handler.close();
      return invoke;
    });
    const runner = new EventSourceRunner({
      client: sqs,
      queueUrl: resources.queueUrl,
      handler: containers.invoke,
      batchSize,
      maximumBatchingWindowMs: batchSize > 10 ? 500 : 0,
      maxConcurrency: options.concurrency ?? 4,
      visibilityTimeoutSeconds: LOCAL_VISIBILITY_TIMEOUT_S,
      functionTimeoutMs: LOCAL_FUNCTION_TIMEOUT_MS,
      functionName: 's3-ingest-local',
    });
    runner.on('invocation', (result) => {
      const summary = summaries.get(result.requestId);
      summaries.delete(result.requestId);
      options.onInvocation?.(result, summary);
    });
    await runner.start();
    let stopped: Promise<EventSourceRunnerStats> | undefined;
    const stop = async () => {
      try {
        return await runner.stop();
      } finally {
        await containers.close();
        sqs.destroy();
        await aws.stop();
      }
    };
    return {
      aws,
      resources,
      runner,
      containers,
      sqs,
      stop: () => {
        stopped ??= stop();
        return stopped;
      },
    };
  } catch (error) {
    sqs.destroy();
    await aws.stop();
    throw error;
  }
}
