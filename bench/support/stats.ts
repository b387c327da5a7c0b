/** Median and spread of repeated measurements. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** Measurements summarised. */
  n: number;
}

/** The median (the mean of the middle two for an even count), min and max of `values`. */
export function spreadOf(values: readonly number[]): Spread {
  if (values.length === 0) throw new RangeError('spreadOf needs at least one value');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, n: sorted.length };
}

/** `12.3 (10.1-15.2)`: the median with the range, for tables. */
export function formatSpread(spread: Spread, digits = 1): string {
  const f = (v: number) => v.toFixed(digits);
  return `${f(spread.median)} (${f(spread.min)}-${f(spread.max)})`;
}
