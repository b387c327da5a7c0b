import { Duration } from 'aws-cdk-lib';
import { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import {
  INGEST_METRIC_DIMENSION,
  INGEST_METRICS,
  type IngestMetricName,
} from '../lib/ingest/metric-names.js';
import type { EnvironmentConfig } from './config.js';

/** A CloudWatch metric for one of the function's EMF metrics, in the environment's namespace and service. */
export function ingestMetric(
  config: Pick<EnvironmentConfig, 'metricsNamespace' | 'serviceName'>,
  name: IngestMetricName,
  statistic = INGEST_METRICS[name].unit === 'Count' ? 'Sum' : 'Maximum',
  period: Duration = Duration.minutes(1),
): Metric {
  return new Metric({
    namespace: config.metricsNamespace,
    metricName: name,
    dimensionsMap: { [INGEST_METRIC_DIMENSION]: config.serviceName },
    statistic,
    period,
  });
}
