import { Duration, Stack } from 'aws-cdk-lib';
import {
  AlarmStatusWidget,
  Dashboard,
  GraphWidget,
  type IAlarm,
  type IMetric,
  MathExpression,
  type Metric,
  TextWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  INGEST_METRIC_CATALOGUE,
  INGEST_METRIC_DIMENSION,
  type IngestCatalogueMetricName,
  type IngestMetricDefinition,
} from '../lib/ingest/metric-names.js';
import { runbooksUrl } from './alarm-catalogue.js';
import type { EnvironmentConfig } from './config.js';
import { type IngestMetricsScope, ingestMetric } from './ingest-metric.js';

export interface IngestDashboardProps {
  readonly config: EnvironmentConfig;
  readonly metrics: IngestMetricsScope;
  readonly dashboardName: string;
  /** The ingest queues; `label` names a producer's queue on the charts ('' for the single queue). */
  readonly queues: readonly { readonly queue: IQueue; readonly label: string }[];
  readonly deadLetterQueue: IQueue;
  readonly rejectedQueue: IQueue;
  readonly fn: IFunction;
  readonly alarms: readonly IAlarm[];
}

const WIDTH = 8;
const HEIGHT = 6;
const PERCENTILES = ['p95', 'p99'] as const;

/** One CloudWatch dashboard per environment: queues, function, records, pool, fleet cap, alarm states. */
export class IngestDashboard extends Construct {
  readonly dashboard: Dashboard;
  /** Console URL of the dashboard (a token until deploy time). */
  readonly url: string;

  constructor(scope: Construct, id: string, props: IngestDashboardProps) {
    super(scope, id);
    const { config, metrics, queues, deadLetterQueue: dlq, rejectedQueue: rejected, fn } = props;
    const named = (label: string, what: string) => (label === '' ? what : `${label}: ${what}`);
    const minute = Duration.minutes(1);
    const own = (name: IngestCatalogueMetricName, statistic?: string): Metric =>
      ingestMetric(metrics, name, statistic, minute);
    // Samples metrics carry every observation, so p95/p99 here are fleet percentiles computed by
    // CloudWatch, not the maximum of per-invocation percentiles.
    const fleetPercentiles = (name: IngestCatalogueMetricName): Metric[] =>
      PERCENTILES.map((p) => own(name, p).with({ label: `${name} ${p}` }));
    // One line per value of the metric's second dimension (cause, reason), whatever values appear.
    const byDimension = (name: IngestCatalogueMetricName): MathExpression => {
      const definition: IngestMetricDefinition = INGEST_METRIC_CATALOGUE[name];
      const schema = [metrics.namespace, INGEST_METRIC_DIMENSION, definition.dimension].filter(Boolean);
      return new MathExpression({
        label: '',
        expression: `SEARCH('{${schema.join(',')}} MetricName="${name}" ${INGEST_METRIC_DIMENSION}="${metrics.serviceName}"', 'Sum', 60)`,
        usingMetrics: {},
        period: minute,
      });
    };
    const graph = (title: string, left: IMetric[], right: IMetric[] = []): GraphWidget =>
      new GraphWidget({ title, left, right, width: WIDTH, height: HEIGHT });
    const depth = (q: IQueue, label: string) =>
      q.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label });
    const age = (q: IQueue, label: string) =>
      q.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum', label });

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${config.serviceName}: SQS -> Lambda -> S3\nFunction metrics: namespace \`${metrics.namespace}\`, dimension \`${INGEST_METRIC_DIMENSION}=${metrics.serviceName}\`. Runbooks: ${runbooksUrl(config.runbookBaseUrl)}`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph(
        'Ingest queue depth',
        queues.flatMap(({ queue, label }) => [
          depth(queue, named(label, 'Visible')),
          queue.metricApproximateNumberOfMessagesNotVisible({
            period: minute,
            statistic: 'Maximum',
            label: named(label, 'In flight'),
          }),
        ]),
      ),
      graph('Oldest message age (s)', [
        ...queues.map(({ queue, label }) =>
          age(queue, label === '' ? 'Ingest queue' : `Ingest queue ${label}`),
        ),
        age(dlq, 'Dead letters'),
        age(rejected, 'Rejected'),
      ]),
      graph(
        'Dead letters and rejected messages',
        [depth(dlq, 'Dead letters (failed after retries)'), depth(rejected, 'Rejected (by the function)')],
        [rejected.metricNumberOfMessagesSent({ period: minute, statistic: 'Sum', label: 'Rejected / min' })],
      ),
    );
    this.dashboard.addWidgets(
      graph(
        'Function invocations',
        [fn.metricInvocations({ period: minute, statistic: 'Sum' })],
        [
          fn.metricErrors({ period: minute, statistic: 'Sum' }),
          fn.metricThrottles({ period: minute, statistic: 'Sum' }),
          own('DeadlineReached'),
        ],
      ),
      new GraphWidget({
        title: 'Function duration (ms)',
        left: ['p50', 'p95', 'p99', 'Maximum'].map((statistic) =>
          fn.metricDuration({ period: minute, statistic, label: statistic }),
        ),
        leftAnnotations: [{ value: config.timeoutSeconds * 1000, label: 'timeout' }],
        width: WIDTH,
        height: HEIGHT,
      }),
      graph('Records', [
        own('RecordsProcessed'),
        own('RecordsFailed'),
        own('RecordsDeadLettered'),
        own('RecordsDeferred'),
        own('StaleWrites'),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Records redelivered by cause', [byDimension('RecordsRedelivered')]),
      graph('Records rejected by reason', [byDimension('RecordsRejected')]),
      graph(
        'Pool: S3 writes, retries, SlowDowns, timeouts, errors',
        [own('Writes')],
        [own('Retries'), own('S3SlowDowns'), own('Timeouts'), own('PoolErrors')],
      ),
    );
    this.dashboard.addWidgets(
      graph('Pool: queue wait, fleet p95/p99 (ms)', fleetPercentiles('QueueWaitMs')),
      graph('Pool: S3 attempt time, fleet p95/p99 (ms)', fleetPercentiles('ExecutionMs')),
      graph('Fleet cap: booking wait, fleet p95/p99 (ms)', fleetPercentiles('BookingWaitMs')),
    );
    this.dashboard.addWidgets(
      graph(
        'Fleet cap: booked write rate, DynamoDB throttles and errors',
        [
          own('BookedWriteRate', 'Maximum').with({ label: 'BookedWriteRate (max)' }),
          own('BookedWriteRate', 'Average').with({ label: 'BookedWriteRate (avg)' }),
        ],
        [own('SemaphoreThrottles'), own('SemaphoreErrors')],
      ),
      new AlarmStatusWidget({ title: 'Alarms', alarms: [...props.alarms], width: 16, height: HEIGHT }),
    );

    const region = Stack.of(this).region;
    this.url = `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${props.dashboardName}`;
  }
}
