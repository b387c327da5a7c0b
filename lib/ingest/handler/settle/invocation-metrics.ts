import type { Metrics } from '@aws-lambda-powertools/metrics';
import { RecordExistsError, RecordNotFoundError } from '../../../db/errors.js';
import { PreconditionFailedError } from '../../../db/object-store.js';
import { isThrottling, isTimeout } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import type { ExecutorPool } from '../../../pool/executor-pool.js';
import {
  INGEST_METRIC_CATALOGUE,
  type IngestDimensionedMetricName,
  type IngestSampleMetricName,
  type IngestValueMetricName,
} from '../../metric-names.js';
import type { SemaphoreObserver } from '../run/observed-budgets.js';
import type { LedgerCounts } from './outcome-ledger.js';
import { SampleReservoir } from './sample-reservoir.js';

/** The per-invocation figures published on the invocation's EMF line (one value each). */
export type InvocationCounts = Record<Exclude<IngestValueMetricName, IngestDimensionedMetricName>, number>;

/** The raw latency observations of one invocation (at most 99 per metric, a uniform sample). */
export type InvocationSamples = Record<IngestSampleMetricName, readonly number[]>;

/** The per-dimension splits, published one EMF line per value (`cause`, `reason`). */
export type InvocationSplits = Record<IngestDimensionedMetricName, Readonly<Record<string, number>>>;

/**
 * A pool task that failed with the store's answer to the question asked, not a failure: a conditional
 * insert finding the object (a redelivered insert's 412, or `record-exists`), a record that is not there
 * (`record-not-found`). The handler turns these into outcomes; counting them as pool errors made a
 * redelivered batch of inserts read as a 100% error rate.
 */
function isExpectedAnswer(error: unknown): boolean {
  return (
    error instanceof PreconditionFailedError ||
    error instanceof RecordExistsError ||
    error instanceof RecordNotFoundError
  );
}

/**
 * What one invocation did, published as EMF through Powertools (`lib/ingest/metric-names.ts`): the pool
 * events of its tenant pools (attached for the invocation only, so warm invocations never count each
 * other's work), its S3 write calls and semaphore calls (reported to it while it is the running one), and
 * its records' outcomes from the ledger. Latencies are raw samples, at most 99 per metric (a uniform
 * reservoir, constant memory), so CloudWatch computes fleet percentiles.
 */
export class InvocationMetrics implements SemaphoreObserver {
  readonly counts: InvocationCounts = {
    RecordsProcessed: 0,
    RecordsFailed: 0,
    RecordsDeadLettered: 0,
    RecordsDeferred: 0,
    StaleWrites: 0,
    Writes: 0,
    Retries: 0,
    S3SlowDowns: 0,
    Timeouts: 0,
    PoolErrors: 0,
    BookedWriteRate: 0,
    DeadlineReached: 0,
    SemaphoreThrottles: 0,
    SemaphoreErrors: 0,
  };
  readonly #samples: Record<IngestSampleMetricName, SampleReservoir> = {
    QueueWaitMs: new SampleReservoir(),
    ExecutionMs: new SampleReservoir(),
    BookingWaitMs: new SampleReservoir(),
  };
  #splits: InvocationSplits = { RecordsRedelivered: {}, RecordsRejected: {} };
  /** Leases whose release failed (they expire by themselves); in the summary and `SemaphoreErrors`. */
  rateReportFailures = 0;
  readonly #detach: (() => void)[] = [];

  /** Listens to `pool` until `detach()`. */
  watch(pool: ExecutorPool): void {
    const completed = (e: PoolEvents['pool:taskCompleted']) => {
      this.#samples.QueueWaitMs.add(e.queueWaitMs);
      this.#samples.ExecutionMs.add(e.durationMs);
    };
    const failed = (e: PoolEvents['pool:taskError']) => {
      this.#samples.ExecutionMs.add(e.durationMs);
      if (isThrottling(e.error)) this.counts.S3SlowDowns++;
      if (isTimeout(e.error)) this.counts.Timeouts++;
      if (!e.willRetry && !isExpectedAnswer(e.error)) this.counts.PoolErrors++;
    };
    const retried = () => {
      this.counts.Retries++;
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

  /** One record was acknowledged as stale (its effect already covered by newer writes). */
  countStale(): void {
    this.counts.StaleWrites++;
  }

  /** One S3 write call (PUT or DELETE attempt) was sent. */
  countWrite(): void {
    this.counts.Writes++;
  }

  permitWait(ms: number): void {
    this.#samples.BookingWaitMs.add(ms);
  }

  semaphoreFailure(error: unknown): void {
    if (isThrottling(error)) this.counts.SemaphoreThrottles++;
    else this.counts.SemaphoreErrors++;
  }

  /** The records' outcomes, once the batch is settled. */
  settle(ledger: LedgerCounts, deadlineReached: boolean): void {
    this.counts.RecordsProcessed = ledger.written;
    this.counts.RecordsDeadLettered = ledger.deadLettered;
    this.counts.RecordsFailed = ledger.redelivered;
    this.counts.RecordsDeferred = ledger.deferred;
    this.counts.DeadlineReached = deadlineReached ? 1 : 0;
    this.#splits = {
      RecordsRedelivered: Object.fromEntries(ledger.redeliveredByCause),
      RecordsRejected: Object.fromEntries(ledger.deadLetteredByReason),
    };
  }

  samples(): InvocationSamples {
    return {
      QueueWaitMs: this.#samples.QueueWaitMs.values(),
      ExecutionMs: this.#samples.ExecutionMs.values(),
      BookingWaitMs: this.#samples.BookingWaitMs.values(),
    };
  }

  splits(): InvocationSplits {
    return this.#splits;
  }

  /**
   * Adds the invocation's line to `metrics` (published by the caller): every count and gauge, and each
   * latency metric that has samples, dimension `service` only; tenants go in metadata (a dimension per
   * tenant would multiply cost). The per-cause and per-reason splits are published at once, one EMF line
   * per value with the second dimension (`singleMetric`), and only for values that occurred.
   */
  addTo(metrics: Metrics, tenants: readonly string[]): void {
    for (const [name, value] of Object.entries(this.counts) as [keyof InvocationCounts, number][])
      metrics.addMetric(name, INGEST_METRIC_CATALOGUE[name].unit, value);
    for (const [name, values] of Object.entries(this.samples()) as [IngestSampleMetricName, number[]][]) {
      for (const value of values) metrics.addMetric(name, INGEST_METRIC_CATALOGUE[name].unit, value);
    }
    if (tenants.length > 0) metrics.addMetadata('tenants', tenants.join(','));
    for (const name of Object.keys(this.#splits) as IngestDimensionedMetricName[]) {
      const { unit, dimension } = INGEST_METRIC_CATALOGUE[name];
      for (const [value, count] of Object.entries(this.#splits[name])) {
        const single = metrics.singleMetric();
        single.addDimension(dimension, value);
        single.addMetric(name, unit, count);
      }
    }
  }
}
