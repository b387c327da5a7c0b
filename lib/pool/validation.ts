// Option checks shared by the pool and its policies: a bad value fails at construction with a RangeError
// naming the field, never later inside a task.

export function assertConcurrency(n: number, what = 'concurrency'): void {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be an integer >= 1, got ${n}`);
}

/** `setConcurrency` also takes fractions (an average in flight): any finite number > 0. */
export function assertFractionalConcurrency(n: number, what = 'concurrency'): void {
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) {
    throw new RangeError(`${what} must be a finite number > 0, got ${n}`);
  }
}

export function nonNegative(name: string, value: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`${name} must be a number >= 0, got ${value}`);
  }
  return value;
}
