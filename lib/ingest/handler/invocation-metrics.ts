import type { Metrics } from '@aws-lambda-powertools/metrics';
import { isThrottling, isTimeout } from '../../errors/classify.js';
import type { PoolEvents } from '../../pool/events.js';
import type { ExecutorPool } from '../../pool/executor-pool.js';
import { Histogram } from '../../pool/histogram.js';
import { INGEST_METRICS, type IngestMetricName } from '../metric-names.js';

/**
 * What one invocation did, gathered from its tenant pools' events (attached for the invocation only) and
 * from the handler's own outcome counts, published as EMF through Powertools. Histograms are per
 * invocation and constant-memory, so a 10,000-record batch costs the same as a 10-record one.
 */
export class InvocationMetrics {
  recordsProcessed = 0;
  recordsFailed = 0;
  recordsDeadLettered = 0;
  writes = 0;
  retries = 0;
  throttles = 0;
  timeouts = 0;
  poolErrors = 0;
  permitsHeld = 0;
  /** Leases whose release failed (they expire by themselves); in the summary and logs, not in EMF. */
  permitReleaseFailures = 0;
  readonly queueWait = new Histogram();
  readonly execution = new Histogram();
  readonly #detach: (() => void)[] = [];

  /** Listens to `pool` until `detach()`. */
  watch(pool: ExecutorPool): void {
    const completed = (e: PoolEvents['pool:taskCompleted']) => {
      this.queueWait.record(e.queueWaitMs);
      this.execution.record(e.durationMs);
    };
    const failed = (e: PoolEvents['pool:taskError']) => {
      if (isThrottling(e.error)) this.throttles++;
      if (isTimeout(e.error)) this.timeouts++;
      if (!e.willRetry) this.poolErrors++;
    };
    const retried = () => {
      this.retries++;
    };
    pool.on('pool:taskCompleted', completed);
    pool.on('pool:taskError', failed);
    pool.on('pool:taskRetry', retried);
    this.#detach.push(() => {
      pool.off('pool:taskCompleted', completed);
      pool.off('pool:taskError', failed);
      pool.off('pool:taskRetry', retried);
    });
  }

  detach(): void {
    for (const off of this.#detach.splice(0)) off();
  }

  /** The figures, by metric name (what `publish` sends; also handy for logs and tests). */
  values(): Record<IngestMetricName, number> {
    const q = (h: Histogram, p: number) => (h.count === 0 ? 0 : h.quantile(p));
    return {
      RecordsProcessed: this.recordsProcessed,
      RecordsFailed: this.recordsFailed,
      RecordsDeadLettered: this.recordsDeadLettered,
      Writes: this.writes,
      Retries: this.retries,
      Throttles: this.throttles,
      Timeouts: this.timeouts,
      PoolErrors: this.poolErrors,
      QueueWaitP50: q(this.queueWait, 0.5),
      QueueWaitP95: q(this.queueWait, 0.95),
      QueueWaitP99: q(this.queueWait, 0.99),
      ExecutionP50: q(this.execution, 0.5),
      ExecutionP95: q(this.execution, 0.95),
      ExecutionP99: q(this.execution, 0.99),
      PermitsHeld: this.permitsHeld,
    };
  }

  /** Adds every metric to `metrics` (tenants go in metadata: a dimension per tenant would multiply cost). */
  addTo(metrics: Metrics, tenants: readonly string[]): void {
    for (const [name, value] of Object.entries(this.values()) as [IngestMetricName, number][]) {
      metrics.addMetric(name, INGEST_METRICS[name].unit, value);
    }
    if (tenants.length > 0) metrics.addMetadata('tenants', tenants.join(','));
  }
}
