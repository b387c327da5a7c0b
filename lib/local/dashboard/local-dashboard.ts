import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalPipeline } from '../lambda/local-pipeline.js';
import { startDashboardServer } from './dashboard-server.js';
import type { DashboardQueueSource, DashboardState } from './dashboard-state.js';
import { samplePipeline } from './pipeline-sampler.js';

export interface LocalDashboardOptions {
  /**
   * Port on 127.0.0.1.
   * @default 0 (any free port)
   */
  readonly port?: number;
  /**
   * How often the pipeline is sampled (queues, schedules, S3 model), ms.
   * @default 1000
   */
  readonly sampleEveryMs?: number;
}

export interface LocalDashboard {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** Samples read and failed (a failed one is skipped: the stack may be stopping). */
  readonly samples: { taken: number; failed: number };
  /** Stops sampling the pipeline (before it stops); the page keeps what it has. Idempotent. */
  stopSampling(): Promise<void>;
  /** Stops sampling and the server. Idempotent. */
  stop(): Promise<void>;
}

/** The stack's queues in the roles the CloudWatch dashboard gives them (one local DLQ plays both). */
export function queueSources(
  pipeline: Pick<LocalPipeline, 'resources' | 'producerQueues'>,
): DashboardQueueSource[] {
  const { resources, producerQueues } = pipeline;
  return [
    { role: 'ingest', label: producerQueues.length === 0 ? '' : 'main', url: resources.queueUrl },
    ...producerQueues.map((q) => ({ role: 'ingest' as const, label: q.producer.name, url: q.queueUrl })),
    { role: 'dead-letter', label: '', url: resources.dlqUrl },
    { role: 'rejected', label: '', url: resources.dlqUrl },
  ];
}

/**
 * Serves the live dashboard of a running local pipeline: `state` already receives the handler's EMF lines
 * and the runner's invocations (`startLocalPipeline`'s `metricLines` and `onInvocation`); this samples the
 * rest every second and serves the page. The S3 model (`pipeline.aws.chaos`) gives the per-prefix counts
 * and the limit the page can change.
 */
export async function startLocalDashboard(
  pipeline: LocalPipeline,
  state: DashboardState,
  options: LocalDashboardOptions = {},
): Promise<LocalDashboard> {
  state.setQueues(queueSources(pipeline));
  const model = pipeline.aws.chaos?.model;
  const dynamodb = new DynamoDBClient(pipeline.aws.clientConfig.dynamodb);
  const sources = {
    sqs: pipeline.sqs,
    queueUrls: [...new Set(queueSources(pipeline).map((q) => q.url))],
    dynamodb,
    tableName: pipeline.resources.tableName,
    bucket: pipeline.resources.bucket,
    ...(model === undefined ? {} : { model }),
    invocationsRunning: () => pipeline.runners.reduce((n, r) => n + r.stats.inFlight, 0),
  };
  const samples = { taken: 0, failed: 0 };
  let pending: Promise<void> | undefined;
  const sample = () => {
    pending ??= samplePipeline(sources)
      .then((s) => {
        samples.taken++;
        state.addPipelineSample(s);
      })
      .catch(() => {
        samples.failed++;
      })
      .finally(() => {
        pending = undefined;
      });
  };
  const timer = setInterval(sample, options.sampleEveryMs ?? 1_000);
  sample();
  let server: Awaited<ReturnType<typeof startDashboardServer>>;
  try {
    server = await startDashboardServer({
      snapshot: (now, seconds) => state.snapshot(now, seconds),
      ...(model === undefined
        ? {}
        : { setS3WriteLimit: (writesPerSecond) => model.setRates({ writesPerSecond }) }),
      ...(options.port === undefined ? {} : { port: options.port }),
    });
  } catch (error) {
    clearInterval(timer);
    dynamodb.destroy();
    throw error;
  }
  let sampling: Promise<void> | undefined;
  const stopSampling = () => {
    sampling ??= (async () => {
      clearInterval(timer);
      await pending;
      dynamodb.destroy();
    })();
    return sampling;
  };
  return {
    url: server.url,
    samples,
    stopSampling,
    stop: async () => {
      await stopSampling();
      await server.stop();
    },
  };
}
