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
  DASHBOARD_ROWS,
  type DashboardMetric,
  type DashboardQueue,
  type DashboardWidget,
} from '../lib/ingest/dashboard-widgets.js';
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

/**
 * One CloudWatch dashboard per environment: the graphs of `DASHBOARD_ROWS` (queues, function, records, pool,
 * fleet cap; the local stack's live page draws the same ones) and the alarms' states.
 */
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
    const queuesOf = (queue: DashboardQueue): { queue: IQueue; label: string }[] =>
      queue === 'ingest' ? [...queues] : [{ queue: queue === 'dead-letter' ? dlq : rejected, label: '' }];
    // One definition can be several lines: one per ingest queue, or one per value of a second dimension.
    const linesOf = (m: DashboardMetric): IMetric[] => {
      const line = {
        period: minute,
        statistic: m.statistic,
        ...(m.label === undefined ? {} : { label: m.label }),
      };
      switch (m.source) {
        case 'function':
          if ('dimension' in INGEST_METRIC_CATALOGUE[m.name]) return [byDimension(m.name)];
          return [
            m.label === undefined
              ? own(m.name, m.statistic)
              : own(m.name, m.statistic).with({ label: m.label }),
          ];
        case 'lambda':
          return [fn.metric(m.name, line)];
        case 'sqs':
          return queuesOf(m.queue).map(({ queue, label }) =>
            queue.metric(m.name, { ...line, label: named(label, m.label ?? m.name) }),
          );
      }
    };
    const graph = (widget: DashboardWidget): GraphWidget => {
      const on = (axis: 'left' | 'right') =>
        widget.metrics.filter((m) => (m.axis ?? 'left') === axis).flatMap(linesOf);
      return new GraphWidget({
        title: widget.title,
        left: on('left'),
        right: on('right'),
        ...(widget.annotation === 'function-timeout'
          ? { leftAnnotations: [{ value: config.timeoutSeconds * 1000, label: 'timeout' }] }
          : {}),
        width: WIDTH,
        height: HEIGHT,
      });
    };

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
    // The shared graphs, row by row; the alarms' states (CloudWatch only) close the last row.
    DASHBOARD_ROWS.forEach((row, i) => {
      const alarms =
        i === DASHBOARD_ROWS.length - 1
          ? [new AlarmStatusWidget({ title: 'Alarms', alarms: [...props.alarms], width: 16, height: HEIGHT })]
          : [];
      this.dashboard.addWidgets(...row.map(graph), ...alarms);
    });

    const region = Stack.of(this).region;
    this.url = `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${props.dashboardName}`;
  }
}
