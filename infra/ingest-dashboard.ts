import { Duration, Stack } from 'aws-cdk-lib';
import {
  AlarmStatusWidget,
  Dashboard,
  GraphWidget,
  type IAlarm,
  type IMetric,
  type Metric,
  TextWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { IngestMetricName } from '../lib/ingest/metric-names.js';
import type { EnvironmentConfig } from './config.js';
import { ingestMetric } from './ingest-metric.js';

export interface IngestDashboardProps {
  readonly config: EnvironmentConfig;
  readonly dashboardName: string;
  readonly queue: IQueue;
  readonly deadLetterQueue: IQueue;
  readonly fn: IFunction;
  readonly alarms: readonly IAlarm[];
}

const WIDTH = 8;
const HEIGHT = 6;

/** One CloudWatch dashboard per environment: queues, function, pool and records, and the alarm states. */
export class IngestDashboard extends Construct {
  readonly dashboard: Dashboard;
  /** Console URL of the dashboard (a token until deploy time). */
  readonly url: string;

  constructor(scope: Construct, id: string, props: IngestDashboardProps) {
    super(scope, id);
    const { config, queue, deadLetterQueue: dlq, fn } = props;
    const minute = Duration.minutes(1);
    const pool = (name: IngestMetricName, statistic?: string): Metric =>
      ingestMetric(config, name, statistic, minute);
    const graph = (title: string, left: IMetric[], right: IMetric[] = []): GraphWidget =>
      new GraphWidget({ title, left, right, width: WIDTH, height: HEIGHT });

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${config.serviceName}: SQS -> Lambda -> S3\nPool metrics: namespace \`${config.metricsNamespace}\`, dimension \`service=${config.serviceName}\`.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph('Ingest queue depth', [
        queue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: 'Maximum',
          label: 'Visible',
        }),
        queue.metricApproximateNumberOfMessagesNotVisible({
          period: minute,
          statistic: 'Maximum',
          label: 'In flight',
        }),
      ]),
      graph('Oldest message age (s)', [
        queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum', label: 'Oldest' }),
      ]),
      graph('DLQ depth', [
        dlq.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label: 'DLQ' }),
      ]),
    );
    this.dashboard.addWidgets(
      graph(
        'Function invocations',
        [fn.metricInvocations({ period: minute, statistic: 'Sum' })],
        [
          fn.metricErrors({ period: minute, statistic: 'Sum' }),
          fn.metricThrottles({ period: minute, statistic: 'Sum' }),
        ],
      ),
      graph(
        'Function duration (ms)',
        ['p50', 'p95', 'p99', 'Maximum'].map((statistic) =>
          fn.metricDuration({ period: minute, statistic, label: statistic }),
        ),
      ),
      graph('Records', [pool('RecordsProcessed'), pool('RecordsFailed'), pool('RecordsDeadLettered')]),
    );
    this.dashboard.addWidgets(
      graph(
        'Pool: writes, retries, SlowDown, timeouts',
        [pool('Writes')],
        [pool('Retries'), pool('Throttles'), pool('Timeouts'), pool('PoolErrors')],
      ),
      graph('Pool: queue wait p95/p99 (ms)', [pool('QueueWaitP95'), pool('QueueWaitP99')]),
      graph('Pool: execution p95/p99 (ms)', [pool('ExecutionP95'), pool('ExecutionP99')]),
    );
    this.dashboard.addWidgets(
      graph('Semaphore permits held', [
        pool('PermitsHeld', 'Maximum').with({ label: 'PermitsHeld (max)' }),
        pool('PermitsHeld', 'Average').with({ label: 'PermitsHeld (avg)' }),
      ]),
      new AlarmStatusWidget({ title: 'Alarms', alarms: [...props.alarms], width: 16, height: HEIGHT }),
    );

    const region = Stack.of(this).region;
    this.url = `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${props.dashboardName}`;
  }
}
