import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { loadConfig } from '../../ingest/config.js';
import { createIngestHandler, type InvocationSummary } from '../../ingest/handler/ingest-handler.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type LocalAws, startLocalAws } from '../emulators/local-aws.js';
import { type LocalResources, provisionLocal } from '../emulators/provision.js';
import type { S3BehaviourOptions } from '../s3-behaviour/s3-behaviour-model.js';
import { EmfLineMetrics } from './emf-line-metrics.js';
import {
  EventSourceRunner,
  type EventSourceRunnerStats,
  type InvocationResult,
} from './event-source-runner.js';
import { type ContainerHandler, LambdaContainers } from './lambda-containers.js';
import { createLocalSqsClient } from './local-sqs-client.js';
import {
  createProducerQueue,
  type LocalProducer,
  type ProducerQueue,
  sourceTenantsOf,
} from './producer-queues.js';
import { SilentMetrics } from './silent-metrics.js';

/** Invocation settings of the local pipeline: short enough that retries of transient failures come back soon. */
export const LOCAL_FUNCTION_TIMEOUT_MS = 8_000;
export const LOCAL_VISIBILITY_TIMEOUT_S = 8;
export const LOCAL_MAX_RECEIVE_COUNT = 5;
/** The namespace and `service` dimension of the local handler's EMF lines. */
export const LOCAL_METRICS = { namespace: 's3-ingest-local', serviceName: 's3-ingest-local' } as const;

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
   * The chaos proxy's whole behaviour (faults, latency, rates) instead of `slowdownRate`'s preset.
   * @default undefined
   * @example { chaos: { faults: { internalErrorRate: 0.1 }, seed: 7 } }
   */
  readonly chaos?: S3BehaviourOptions;
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
  /**
   * Called with every EMF line the handler publishes (the JSON text CloudWatch would ingest), printed or
   * not (`verbose`).
   * @default undefined
   * @example { metricLines: (line) => dashboard.addEmfLine(line) }
   */
  readonly metricLines?: (line: string) => void;
  /**
   * FIFO ingest queue(s) and DLQ; batches of at most 10, no batching window (Lambda's FIFO rules).
   * @default false
   * @example { fifo: true }
   */
  readonly fifo?: boolean;
  /**
   * Tenant-bound producers: one more queue per producer, each with its own event source on the
   * same function, and `SOURCE_TENANTS` binding each to its tenants. The main queue stays consumed but is
   * bound to no tenant, so whatever is sent there is refused (`unknown-source`): fail closed.
   * @default [] (single-queue mode)
   * @example { producers: [{ name: 'billing', tenants: ['billing-*'] }] }
   */
  readonly producers?: readonly LocalProducer[];
}

/** The embedded stack, provisioned, with the event-source runner invoking the real handler. */
export interface LocalPipeline {
  readonly aws: LocalAws;
  readonly resources: LocalResources;
  /** The main queue's runner. */
  readonly runner: EventSourceRunner;
  /** Every runner: the main queue's, then one per producer queue. */
  readonly runners: readonly EventSourceRunner[];
  /** The producers' queues, in the order given. */
  readonly producerQueues: readonly ProducerQueue[];
  readonly containers: LambdaContainers;
  /** The runners' SQS client (endpoint of the embedded SQS; `createLocalSqsClient`). */
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
  const fifo = options.fifo ?? false;
  const producers = options.producers ?? [];
  const aws = await startLocalAws(
    options.chaos !== undefined
      ? { chaos: options.chaos }
      : slowdownRate === undefined
        ? {}
        : { chaos: { writesPerSecond: slowdownRate, latency: { medianMs: 15, p99Ms: 80 } } },
  );
  // The producer's and the runners' SQS traffic: the lean client (no MD5 of every body, trimmed stack).
  const sqs = createLocalSqsClient(aws.clientConfig.sqs);
  try {
    const resources = await provisionLocal({
      // Provision the emulators directly: the chaos proxy could throttle or fault the setup itself.
      endpoints: aws.emulatorEndpoints,
      maxReceiveCount: LOCAL_MAX_RECEIVE_COUNT,
      visibilityTimeoutSeconds: LOCAL_VISIBILITY_TIMEOUT_S,
      fifo,
    });
    const producerQueues = await Promise.all(
      producers.map((producer) =>
        createProducerQueue(sqs, producer, {
          dlqArn: resources.dlqArn,
          maxReceiveCount: LOCAL_MAX_RECEIVE_COUNT,
          visibilityTimeoutSeconds: LOCAL_VISIBILITY_TIMEOUT_S,
          fifo,
        }),
      ),
    );
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
      ...(producerQueues.length === 0 ? {} : { SOURCE_TENANTS: sourceTenantsOf(producerQueues) }),
    });
    // Joins the runner's `invocation` event with the handler's summary (a container runs one at a time).
    const summaries = new Map<string, InvocationSummary>();
    const containers = new LambdaContainers((): ContainerHandler => {
      let requestId = '';
      const handler = createIngestHandler(config, {
        logger: new Logger({ serviceName: 's3-ingest-local', logLevel: verbose ? 'INFO' : 'ERROR' }),
        // Published after every invocation: printed with --verbose, dropped otherwise.
        metrics:
          options.metricLines === undefined
            ? new (verbose ? Metrics : SilentMetrics)(LOCAL_METRICS)
            : new EmfLineMetrics(LOCAL_METRICS, options.metricLines, verbose),
        onInvocation: (summary) => summaries.set(requestId, summary),
      });
      const invoke: ContainerHandler = (event, context) => {
        requestId = context.awsRequestId;
        return handler(event, context);
      };
      invoke.close = () => handler.close();
      return invoke;
    });
    // One event source per queue, all on the same function (its containers), as the stack wires them.
    const runners = [resources.queueUrl, ...producerQueues.map((q) => q.queueUrl)].map((queueUrl) => {
      const runner = new EventSourceRunner({
        client: sqs,
        queueUrl,
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
      return runner;
    });
    const runner = runners[0]!;
    await Promise.all(runners.map((r) => r.start()));
    let stopped: Promise<EventSourceRunnerStats> | undefined;
    const stop = async () => {
      try {
        const [main] = await Promise.all(runners.map((r) => r.stop()));
        return main!;
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
      runners,
      producerQueues,
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
