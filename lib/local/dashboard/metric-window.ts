import type { DashboardStatistic } from '../../ingest/dashboard-widgets.js';

/** `statistic` over `values` as CloudWatch computes it over a period (`null`: no value, no datapoint). */
export function statisticOf(values: readonly number[], statistic: DashboardStatistic): number | null {
  if (values.length === 0) return null;
  switch (statistic) {
    case 'Sum':
      return values.reduce((a, b) => a + b, 0);
    case 'Maximum':
      return Math.max(...values);
    case 'Average':
      return values.reduce((a, b) => a + b, 0) / values.length;
    default: {
      // Nearest rank: the smallest value with at least p% of the values at or below it.
      const sorted = [...values].sort((a, b) => a - b);
      const p = Number(statistic.slice(1)) / 100;
      return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
    }
  }
}

/**
 * The values of named series over the last `periods` periods of `periodMs` each, every value kept (so any
 * statistic, percentiles included, is computed over the raw values of a period, as CloudWatch does).
 * Older periods are dropped as new values arrive.
 */
export class MetricWindow {
  readonly #series = new Map<string, Map<number, number[]>>();

  constructor(
    readonly periodMs = 1_000,
    readonly periods = 300,
  ) {}

  /** The period `at` (epoch ms) falls in. */
  periodOf(at: number): number {
    return Math.floor(at / this.periodMs);
  }

  add(key: string, value: number, at: number): void {
    let periods = this.#series.get(key);
    if (periods === undefined) {
      periods = new Map();
      this.#series.set(key, periods);
    }
    const period = this.periodOf(at);
    const values = periods.get(period);
    if (values === undefined) periods.set(period, [value]);
    else values.push(value);
    this.#prune(periods, period);
  }

  /** The keys that start with `prefix`, in the order they first had a value. */
  keys(prefix: string): string[] {
    return [...this.#series.keys()].filter((key) => key.startsWith(prefix));
  }

  /** `statistic` of each period from `first` to `last` (period numbers, inclusive); `null` where none. */
  points(key: string, statistic: DashboardStatistic, first: number, last: number): (number | null)[] {
    const periods = this.#series.get(key);
    const points: (number | null)[] = [];
    for (let period = first; period <= last; period++)
      points.push(statisticOf(periods?.get(period) ?? [], statistic));
    return points;
  }

  #prune(periods: Map<number, number[]>, newest: number): void {
    // Periods arrive in time order (near enough), so the oldest come first.
    for (const period of periods.keys()) {
      if (period > newest - this.periods) break;
      periods.delete(period);
    }
  }
}
