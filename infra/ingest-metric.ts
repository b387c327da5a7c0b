import { Duration } from 'aws-cdk-lib';
import { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import {
  INGEST_METRIC_CATALOGUE,
  INGEST_METRIC_DIMENSION,
  type IngestCatalogueMetricName,
} from '../lib/ingest/metric-names.js';
import type { ResolvedEnvironment } from './config.js';

/** Where one environment's function metrics live: its own namespace, and the `service` dimension value. */
export interface IngestMetricsScope {
  readonly namespace: string;
  readonly serviceName: string;
}

/**
 * `<metricsNamespace>/<env>` (e.g. `S3Ingest/prod`): environments sharing an account and region must not
 * add up on one dashboard. Passed to the function as `POWERTOOLS_METRICS_NAMESPACE`, so Powertools
 * publishes there with no code change.
 */
export function ingestMetricsScope({ name, config }: ResolvedEnvironment): IngestMetricsScope {
  return { namespace: `${config.metricsNamespace}/${name}`, serviceName: config.serviceName };
}

/** A CloudWatch metric for one of the function's EMF metrics, in the environment's namespace and service. */
export function ingestMetric(
  scope: IngestMetricsScope,
  name: IngestCatalogueMetricName,
  statistic: string = INGEST_METRIC_CATALOGUE[name].unit === 'Count' ? 'Sum' : 'Maximum',
  period: Duration = Duration.minutes(1),
): Metric {
  return new Metric({
    namespace: scope.namespace,
    metricName: name,
    dimensionsMap: { [INGEST_METRIC_DIMENSION]: scope.serviceName },
    statistic,
    period,
  });
}
