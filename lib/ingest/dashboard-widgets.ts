import type { IngestCatalogueMetricName } from './metric-names.js';

/**
 * The graphs of the ingest dashboard, as data: the CloudWatch dashboard the stack deploys
 * (`infra/ingest-dashboard.ts`) and the live page of the local stack (`lib/local/dashboard/`) both draw
 * exactly these, so the two cannot drift (`test/infra/dashboard-widgets.test.ts` compares them). Data only:
 * nothing here is imported by the function.
 */

/** A CloudWatch statistic the widgets use; the local page computes the same over its own periods. */
export type DashboardStatistic = 'Sum' | 'Maximum' | 'Average' | 'p50' | 'p95' | 'p99';

/** Which queue of the stack an SQS metric is read on (`ingest`: each ingest queue, one line per queue). */
export type DashboardQueue = 'ingest' | 'dead-letter' | 'rejected';

/** The `AWS/SQS` metrics the widgets plot. */
export type DashboardQueueMetricName =
  | 'ApproximateNumberOfMessagesVisible'
  | 'ApproximateNumberOfMessagesNotVisible'
  | 'ApproximateAgeOfOldestMessage'
  | 'NumberOfMessagesSent';

/** The `AWS/Lambda` metrics of the function the widgets plot. */
export type DashboardLambdaMetricName = 'Invocations' | 'Errors' | 'Throttles' | 'Duration';

interface PlottedMetric {
  readonly statistic: DashboardStatistic;
  /** The line's label; none: CloudWatch's default (the metric name). */
  readonly label?: string;
  /** @default 'left' */
  readonly axis?: 'left' | 'right';
}

/**
 * One line of a graph. `function`: an EMF metric of the handler (`lib/ingest/metric-names.ts`); a metric
 * the catalogue gives a second dimension (`cause`, `reason`) is drawn one line per value that occurs.
 * `lambda`: the function's own metric. `sqs`: a queue's metric.
 */
export type DashboardMetric = PlottedMetric &
  (
    | { readonly source: 'function'; readonly name: IngestCatalogueMetricName }
    | { readonly source: 'lambda'; readonly name: DashboardLambdaMetricName }
    | { readonly source: 'sqs'; readonly name: DashboardQueueMetricName; readonly queue: DashboardQueue }
  );

/** One graph. */
export interface DashboardWidget {
  /** Stable id (the local page's DOM id). */
  readonly id: string;
  readonly title: string;
  /** The unit of its left axis. */
  readonly unit: 'Count' | 'Count/Second' | 'Milliseconds' | 'Seconds';
  readonly metrics: readonly DashboardMetric[];
  /** A horizontal line: the function's timeout. */
  readonly annotation?: 'function-timeout';
}

const fn = (name: IngestCatalogueMetricName, statistic: DashboardStatistic = 'Sum', more = {}) =>
  ({ source: 'function', name, statistic, ...more }) as const;
const fleetPercentiles = (name: IngestCatalogueMetricName) =>
  (['p95', 'p99'] as const).map((p) => fn(name, p, { label: `${name} ${p}` }));
const right = { axis: 'right' } as const;

/** The dashboard's graphs, row by row (three to a row of the CloudWatch dashboard). */
export const DASHBOARD_ROWS: readonly (readonly DashboardWidget[])[] = [
  [
    {
      id: 'queue-depth',
      title: 'Ingest queue depth',
      unit: 'Count',
      metrics: [
        {
          source: 'sqs',
          queue: 'ingest',
          name: 'ApproximateNumberOfMessagesVisible',
          statistic: 'Maximum',
          label: 'Visible',
        },
        {
          source: 'sqs',
          queue: 'ingest',
          name: 'ApproximateNumberOfMessagesNotVisible',
          statistic: 'Maximum',
          label: 'In flight',
        },
      ],
    },
    {
      id: 'oldest-message-age',
      title: 'Oldest message age (s)',
      unit: 'Seconds',
      metrics: [
        {
          source: 'sqs',
          queue: 'ingest',
          name: 'ApproximateAgeOfOldestMessage',
          statistic: 'Maximum',
          label: 'Ingest queue',
        },
        {
          source: 'sqs',
          queue: 'dead-letter',
          name: 'ApproximateAgeOfOldestMessage',
          statistic: 'Maximum',
          label: 'Dead letters',
        },
        {
          source: 'sqs',
          queue: 'rejected',
          name: 'ApproximateAgeOfOldestMessage',
          statistic: 'Maximum',
          label: 'Rejected',
        },
      ],
    },
    {
      id: 'dead-letters',
      title: 'Dead letters and rejected messages',
      unit: 'Count',
      metrics: [
        {
          source: 'sqs',
          queue: 'dead-letter',
          name: 'ApproximateNumberOfMessagesVisible',
          statistic: 'Maximum',
          label: 'Dead letters (failed after retries)',
        },
        {
          source: 'sqs',
          queue: 'rejected',
          name: 'ApproximateNumberOfMessagesVisible',
          statistic: 'Maximum',
          label: 'Rejected (by the function)',
        },
        {
          source: 'sqs',
          queue: 'rejected',
          name: 'NumberOfMessagesSent',
          statistic: 'Sum',
          label: 'Rejected / min',
          ...right,
        },
      ],
    },
  ],
  [
    {
      id: 'invocations',
      title: 'Function invocations',
      unit: 'Count',
      metrics: [
        { source: 'lambda', name: 'Invocations', statistic: 'Sum' },
        { source: 'lambda', name: 'Errors', statistic: 'Sum', ...right },
        { source: 'lambda', name: 'Throttles', statistic: 'Sum', ...right },
        fn('DeadlineReached', 'Sum', right),
      ],
    },
    {
      id: 'duration',
      title: 'Function duration (ms)',
      unit: 'Milliseconds',
      annotation: 'function-timeout',
      metrics: (['p50', 'p95', 'p99', 'Maximum'] as const).map((statistic) => ({
        source: 'lambda',
        name: 'Duration',
        statistic,
        label: statistic,
      })),
    },
    {
      id: 'records',
      title: 'Records',
      unit: 'Count',
      metrics: [
        fn('RecordsProcessed'),
        fn('RecordsFailed'),
        fn('RecordsDeadLettered'),
        fn('RecordsDeferred'),
        fn('StaleWrites'),
      ],
    },
  ],
  [
    {
      id: 'redelivered-by-cause',
      title: 'Records redelivered by cause',
      unit: 'Count',
      metrics: [fn('RecordsRedelivered')],
    },
    {
      id: 'rejected-by-reason',
      title: 'Records rejected by reason',
      unit: 'Count',
      metrics: [fn('RecordsRejected')],
    },
    {
      id: 'pool-writes',
      title: 'Pool: S3 writes, retries, SlowDowns, timeouts, errors',
      unit: 'Count',
      metrics: [
        fn('Writes'),
        fn('Retries', 'Sum', right),
        fn('S3SlowDowns', 'Sum', right),
        fn('Timeouts', 'Sum', right),
        fn('PoolErrors', 'Sum', right),
      ],
    },
  ],
  [
    {
      id: 'queue-wait',
      title: 'Pool: queue wait, fleet p95/p99 (ms)',
      unit: 'Milliseconds',
      metrics: fleetPercentiles('QueueWaitMs'),
    },
    {
      id: 'execution',
      title: 'Pool: S3 attempt time, fleet p95/p99 (ms)',
      unit: 'Milliseconds',
      metrics: fleetPercentiles('ExecutionMs'),
    },
    {
      id: 'booking-wait',
      title: 'Fleet cap: booking wait, fleet p95/p99 (ms)',
      unit: 'Milliseconds',
      metrics: fleetPercentiles('BookingWaitMs'),
    },
  ],
  [
    {
      id: 'booked-rate',
      title: 'Fleet cap: booked write rate, DynamoDB throttles and errors',
      unit: 'Count/Second',
      metrics: [
        fn('BookedWriteRate', 'Maximum', { label: 'BookedWriteRate (max)' }),
        fn('BookedWriteRate', 'Average', { label: 'BookedWriteRate (avg)' }),
        fn('SemaphoreThrottles', 'Sum', right),
        fn('SemaphoreErrors', 'Sum', right),
      ],
    },
  ],
];

/** Every graph, in dashboard order. */
export const DASHBOARD_WIDGETS: readonly DashboardWidget[] = DASHBOARD_ROWS.flat();
