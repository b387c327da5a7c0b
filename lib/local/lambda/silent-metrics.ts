import { Metrics } from '@aws-lambda-powertools/metrics';

/**
 * Powertools `Metrics` that print nothing: publishing only clears what was stored, and single-metric
 * lines (the handler's per-cause and per-reason lines) are silent too. For local runs that do not show
 * EMF lines: without publishing, a shared instance would keep accumulating samples across invocations
 * until Powertools flushes it on its own (at 100 values of one metric), mid-run, onto stdout.
 */
export class SilentMetrics extends Metrics {
  override publishStoredMetrics(): this {
    this.clearMetrics();
    this.clearMetadata();
    return this;
  }

  override singleMetric(): Metrics {
    return new SilentMetrics({ namespace: 'silent', serviceName: 'silent' });
  }
}
