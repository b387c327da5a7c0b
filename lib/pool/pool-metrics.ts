import { Histogram } from './histogram.js';

export interface PoolStats {
  /** Tasks waiting in the queue for a slot (not counting tasks waiting out a retry backoff). */
  queueSize: number;
  /** Attempts holding a slot, including timed-out or aborted work that has not settled yet. */
  activeCount: number;
  /** Tasks that succeeded. */
  processedCount: number;
  /** Tasks that finally failed (errors, timeouts, aborts, stop, breaker refusals at start). */
  errorCount: number;
  /** Retry attempts scheduled. */
  retryCount: number;
}

export interface AggregateMetrics {
  /** Mean attempt execution time in ms. */
  avgExecution: number;
  /** 95th percentile attempt execution time in ms. */
  p95Execution: number;
  /** Tasks settled per second since the first attempt started. */
  throughput: number;
}

export interface Quantiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface DetailedMetrics {
  /** Attempt execution time quantiles in ms (alias of `execution`). */
  latency: Quantiles;
  execution: Quantiles & { mean: number; max: number; count: number };
  queueWait: Quantiles & { mean: number; max: number; count: number };
  /** Tasks settled per second: over the last second, the best one-second window, and overall. */
  throughput: { current: number; peak: number; avg: number };
  /** `rate`: failed attempts / finished attempts; `types`: failed attempts by error name (top 32 names). */
  errors: { rate: number; types: Record<string, number> };
  /** `avg` is time-weighted since the first start; `utilization` = avg / current cap. */
  concurrency: { current: number; avg: number; utilization: number };
}

const SLOT_MS = 100;
const SLOTS = 10; // one second of 100 ms slots
const MAX_ERROR_TYPES = 32;

/**
 * Everything the pool measures, in constant memory: two histograms, a one-second ring of completion
 * counts, a time-weighted integral of the in-flight count and a capped map of error names.
 */
export class PoolMetrics {
  readonly queueWait = new Histogram();
  readonly execution = new Histogram();
  readonly #slots = new Float64Array(SLOTS);
  #slot = -1;
  #peak = 0;
  #settled = 0;
  #firstStart = -1;
  #lastEvent = 0;
  #active = 0;
  #activeArea = 0;
  #attempts = 0;
  #failedAttempts = 0;
  readonly #errorTypes = new Map<string, number>();

  /** An attempt started; `active` is the in-flight count after it. */
  started(now: number, queueWaitMs: number, active: number): void {
    if (this.#firstStart < 0) {
      this.#firstStart = now;
      this.#lastEvent = now;
    }
    this.queueWait.record(queueWaitMs);
    this.#integrate(now, active);
  }

  /** An attempt released its slot; `active` is the in-flight count after it. */
  released(now: number, active: number): void {
    this.#integrate(now, active);
  }

  /** An attempt finished from its caller's point of view (settled or timed out). */
  attemptFinished(durationMs: number, error: unknown): void {
    this.execution.record(durationMs);
    this.#attempts += 1;
    if (error === undefined) return;
    this.#failedAttempts += 1;
    const name = errorName(error);
    const seen = this.#errorTypes.get(name);
    if (seen !== undefined) this.#errorTypes.set(name, seen + 1);
    else if (this.#errorTypes.size < MAX_ERROR_TYPES) this.#errorTypes.set(name, 1);
  }

  /** A task settled (succeeded or finally failed). */
  taskSettled(now: number): void {
    this.#settled += 1;
    const slot = Math.floor(now / SLOT_MS);
    if (slot !== this.#slot) this.#advance(slot);
    this.#slots[slot % SLOTS]! += 1;
  }

  #advance(slot: number): void {
    if (this.#slot >= 0) {
      // The window that just closed is a candidate for the peak before older slots are overwritten.
      const closed = this.#windowSum();
      if (closed > this.#peak) this.#peak = closed;
      const gap = Math.min(SLOTS, slot - this.#slot);
      for (let i = 1; i <= gap; i++) this.#slots[(this.#slot + i) % SLOTS] = 0;
    }
    this.#slot = slot;
  }

  #windowSum(): number {
    let sum = 0;
    for (let i = 0; i < SLOTS; i++) sum += this.#slots[i]!;
    return sum;
  }

  #integrate(now: number, active: number): void {
    this.#activeArea += this.#active * (now - this.#lastEvent);
    this.#lastEvent = now;
    this.#active = active;
  }

  aggregate(now: number): AggregateMetrics {
    return {
      avgExecution: this.execution.mean,
      p95Execution: this.execution.quantile(0.95),
      throughput: this.#avgThroughput(now),
    };
  }

  #avgThroughput(now: number): number {
    const elapsed = this.#firstStart < 0 ? 0 : now - this.#firstStart;
    return elapsed > 0 ? (this.#settled * 1000) / elapsed : 0;
  }

  detailed(now: number, cap: number): DetailedMetrics {
    const slot = Math.floor(now / SLOT_MS);
    if (this.#slot >= 0 && slot !== this.#slot) this.#advance(slot);
    const current = this.#windowSum();
    const area = this.#activeArea + this.#active * (now - this.#lastEvent);
    const elapsed = this.#firstStart < 0 ? 0 : now - this.#firstStart;
    const avgConcurrency = elapsed > 0 ? area / elapsed : this.#active;
    const execution = summary(this.execution);
    return {
      latency: { p50: execution.p50, p95: execution.p95, p99: execution.p99 },
      execution,
      queueWait: summary(this.queueWait),
      throughput: { current, peak: Math.max(this.#peak, current), avg: this.#avgThroughput(now) },
      errors: {
        rate: this.#attempts === 0 ? 0 : this.#failedAttempts / this.#attempts,
        types: Object.fromEntries(this.#errorTypes),
      },
      concurrency: { current: this.#active, avg: avgConcurrency, utilization: avgConcurrency / cap },
    };
  }
}

function summary(h: Histogram): Quantiles & { mean: number; max: number; count: number } {
  return {
    p50: h.quantile(0.5),
    p95: h.quantile(0.95),
    p99: h.quantile(0.99),
    mean: h.mean,
    max: h.max,
    count: h.count,
  };
}

function errorName(error: unknown): string {
  if (error !== null && typeof error === 'object') {
    let name: unknown;
    try {
      name = (error as { name?: unknown }).name;
    } catch {
      // A getter that throws (a revoked Proxy, a buggy library's error) must not stop the pool.
      return typeof error;
    }
    if (typeof name === 'string' && name.length > 0) return name;
  }
  return typeof error;
}
