/**
 * The CloudWatch metrics the ingest function emits (Powertools EMF) and the stack charts and alarms on.
 * One list shared by both sides, so a renamed metric breaks the build instead of silently emptying a
 * dashboard widget or an alarm.
 *
 * Every metric is published in the namespace of the environment's `metricsNamespace` with the single
 * dimension `service` (= `serviceName`, Powertools' default dimension). Tenant and resource go into EMF
 * metadata, never into dimensions: one dimension value per tenant would multiply the custom-metric bill
 * and make alarms per tenant impossible to maintain.
 */

/** CloudWatch units used by the ingest metrics (the same strings as Powertools' `MetricUnit`). */
export type IngestMetricUnit = 'Count' | 'Milliseconds';

/** What one metric means, so the emitting side and the charting side agree on semantics, not just names. */
export interface IngestMetricDefinition {
  readonly unit: IngestMetricUnit;
  readonly description: string;
}

export const INGEST_METRICS = {
  RecordsProcessed: { unit: 'Count', description: 'SQS records whose write was applied (per invocation).' },
  RecordsFailed: {
    unit: 'Count',
    description: 'SQS records returned in batchItemFailures (transient failures SQS redelivers).',
  },
  RecordsDeadLettered: {
    unit: 'Count',
    description: 'SQS records the function sent to the DLQ itself (permanent failures, with a reason).',
  },
  Writes: {
    unit: 'Count',
    description:
      'Writes applied (insert/upsert/update/delete): one S3 PUT or DELETE each; an update also reads first.',
  },
  Retries: { unit: 'Count', description: 'Pool retries of an S3 call (each retry counted once).' },
  Throttles: { unit: 'Count', description: 'S3 SlowDown / 503 responses seen by the pool.' },
  Timeouts: { unit: 'Count', description: 'Pool tasks that hit their per-task timeout.' },
  PoolErrors: {
    unit: 'Count',
    description: 'Pool tasks that failed for good (after retries, or not retryable).',
  },
  QueueWaitP50: { unit: 'Milliseconds', description: 'Median time a task waited in a pool queue.' },
  QueueWaitP95: { unit: 'Milliseconds', description: 'p95 time a task waited in a pool queue.' },
  QueueWaitP99: { unit: 'Milliseconds', description: 'p99 time a task waited in a pool queue.' },
  ExecutionP50: { unit: 'Milliseconds', description: 'Median execution time of a pool task (one attempt).' },
  ExecutionP95: { unit: 'Milliseconds', description: 'p95 execution time of a pool task (one attempt).' },
  ExecutionP99: { unit: 'Milliseconds', description: 'p99 execution time of a pool task (one attempt).' },
  PermitsHeld: {
    unit: 'Count',
    description: 'Semaphore permits the invocation held (its share of the per-prefix write budget).',
  },
} as const satisfies Record<string, IngestMetricDefinition>;

export type IngestMetricName = keyof typeof INGEST_METRICS;

/** All metric names, in declaration order. */
export const INGEST_METRIC_NAMES = Object.keys(INGEST_METRICS) as IngestMetricName[];

/** The only dimension the ingest metrics carry; its value is the environment's `serviceName`. */
export const INGEST_METRIC_DIMENSION = 'service';
