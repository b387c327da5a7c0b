/**
 * The CloudWatch metrics the ingest function emits (Powertools EMF) and the stack charts and alarms on.
 * One list shared by both sides, so a renamed metric breaks the build instead of silently emptying a
 * dashboard widget or an alarm.
 *
 * Namespace: the function's `POWERTOOLS_METRICS_NAMESPACE`, which the stack sets per environment
 * (`<metricsNamespace>/<env>`, e.g. `S3Ingest/prod`), so environments sharing an account and region never
 * add up. Dimensions: `service` (= `serviceName`, Powertools' default dimension) on every metric, plus at
 * most one low-cardinality dimension from a closed set of values (`cause`, `reason`). Tenant and resource
 * go into EMF metadata, never into dimensions: one series per tenant would multiply the custom-metric
 * bill and make alarms per tenant impossible to maintain.
 */

/** CloudWatch units used by the ingest metrics (the same strings as Powertools' `MetricUnit`). */
export type IngestMetricUnit = 'Count' | 'Count/Second' | 'Milliseconds';

/** The dimension every ingest metric carries; its value is the environment's `serviceName`. */
export const INGEST_METRIC_DIMENSION = 'service';

/**
 * The second dimension a metric may carry. `cause`: why a record was returned in `batchItemFailures`
 * (the handler's `TransientCause`: `storage`, `deadline`, `permits-unavailable`, `earlier-write-failed`,
 * `dead-letter-failed`, `unexpected`). `reason`: the `reason` attribute of a dead letter (the handler's
 * `DeadLetterReason`: every `InvalidMessageReason` plus `schema-violation`, `record-not-found`,
 * `record-exists`, `tenant-not-allowed`, `unknown-source`). Both are closed sets of under 20 values.
 */
export type IngestMetricExtraDimension = 'cause' | 'reason';

/** What one metric means, so the emitting side and the charting side agree on semantics, not just names. */
export interface IngestMetricDefinition {
  readonly unit: IngestMetricUnit;
  readonly description: string;
  /** The dimension besides `service`, if any. */
  readonly dimension?: IngestMetricExtraDimension;
  /**
   * `count`: one value per invocation (a sum). `samples`: many values per invocation, one per observation
   * (EMF value arrays, at most 100 per metric per EMF line), so CloudWatch computes fleet percentiles
   * (`p95`, `p99`) over every sample instead of charting the maximum of per-invocation percentiles.
   */
  readonly kind: 'count' | 'samples' | 'gauge';
}

/**
 * Every metric the function emits, keyed by metric name. The stack charts and alarms only on
 * these names.
 */
export const INGEST_METRIC_CATALOGUE = {
  RecordsProcessed: {
    unit: 'Count',
    kind: 'count',
    description: 'SQS records whose write was applied, or found applied by an earlier delivery.',
  },
  RecordsFailed: {
    unit: 'Count',
    kind: 'count',
    description:
      'SQS records returned in batchItemFailures (SQS redelivers them). Partial batch failures never show in Lambda Errors.',
  },
  RecordsRedelivered: {
    unit: 'Count',
    kind: 'count',
    dimension: 'cause',
    description:
      'RecordsFailed split by cause (dimension `cause`); the per-cause values add up to RecordsFailed.',
  },
  RecordsDeadLettered: {
    unit: 'Count',
    kind: 'count',
    description: 'SQS records the function sent to its rejected-messages queue itself (permanent failures).',
  },
  RecordsDeferred: {
    unit: 'Count',
    kind: 'count',
    description:
      'SQS records whose tenant did not get its prefix permits in time, re-sent to their own queue with a delay (acknowledged; the copy carries the write). Not in RecordsFailed.',
  },
  RecordsRejected: {
    unit: 'Count',
    kind: 'count',
    dimension: 'reason',
    description: 'RecordsDeadLettered split by the dead letter `reason` (dimension `reason`).',
  },
  StaleWrites: {
    unit: 'Count',
    kind: 'count',
    description:
      'Records acknowledged without changing their record: a newer write (by `seq`) already covered their effect, or a duplicate delivery. Counted in RecordsProcessed too.',
  },
  Writes: {
    unit: 'Count',
    kind: 'count',
    description:
      'S3 write calls issued (PutObject, DeleteObject), every attempt counted; not records processed.',
  },
  Retries: {
    unit: 'Count',
    kind: 'count',
    description: 'Pool retries of an S3 call (each retry counted once).',
  },
  S3SlowDowns: {
    unit: 'Count',
    kind: 'count',
    description:
      'S3 SlowDown / 503 responses seen by the pool (not Lambda throttles; AWS/Lambda Throttles is a different metric).',
  },
  Timeouts: { unit: 'Count', kind: 'count', description: 'Pool tasks that hit their per-task timeout.' },
  PoolErrors: {
    unit: 'Count',
    kind: 'count',
    description:
      'Pool tasks that failed for good (after retries, or not retryable). Expected outcomes are not errors: an idempotent 412 on a redelivered insert, record-exists, record-not-found.',
  },
  QueueWaitMs: {
    unit: 'Milliseconds',
    kind: 'samples',
    description:
      'Time a pool task waited for a slot, one sample per task (sampled down to 100 per invocation at most).',
  },
  ExecutionMs: {
    unit: 'Milliseconds',
    kind: 'samples',
    description:
      'Execution time of one S3 attempt, one sample per attempt (sampled down to 100 per invocation).',
  },
  BookingWaitMs: {
    unit: 'Milliseconds',
    kind: 'samples',
    description:
      'Time one booking of slots in a prefix schedule took, one sample per booking (per tenant prefix).',
  },
  BookedWriteRate: {
    unit: 'Count/Second',
    kind: 'gauge',
    description:
      "Writes per second the invocation's booked tenants paced at, summed (their prefixes' fleet-wide rates).",
  },
  DeadlineReached: {
    unit: 'Count',
    kind: 'count',
    description: 'Invocations that reached the deadline margin and stopped starting work (1 per invocation).',
  },
  SemaphoreThrottles: {
    unit: 'Count',
    kind: 'count',
    description: 'DynamoDB throttling errors on semaphore calls (acquire, release, reclaim).',
  },
  SemaphoreErrors: {
    unit: 'Count',
    kind: 'count',
    description:
      'Semaphore calls that failed for another reason (unreachable, 5xx, release failures); a lost condition race is not an error.',
  },
} as const satisfies Record<string, IngestMetricDefinition>;

export type IngestCatalogueMetricName = keyof typeof INGEST_METRIC_CATALOGUE;

/** Every catalogue metric name, in declaration order. */
export const INGEST_CATALOGUE_METRIC_NAMES = Object.keys(
  INGEST_METRIC_CATALOGUE,
) as IngestCatalogueMetricName[];

/** The metrics with one value per invocation (`kind` `count` or `gauge`). */
export type IngestValueMetricName = {
  [K in IngestCatalogueMetricName]: (typeof INGEST_METRIC_CATALOGUE)[K]['kind'] extends 'samples' ? never : K;
}[IngestCatalogueMetricName];

/** The metrics published as raw samples (`kind` `samples`: EMF value arrays, fleet percentiles). */
export type IngestSampleMetricName = Exclude<IngestCatalogueMetricName, IngestValueMetricName>;

/** The catalogue metrics published with a second dimension (`cause` or `reason`). */
export type IngestDimensionedMetricName = {
  [K in IngestCatalogueMetricName]: (typeof INGEST_METRIC_CATALOGUE)[K] extends { dimension: string }
    ? K
    : never;
}[IngestCatalogueMetricName];
