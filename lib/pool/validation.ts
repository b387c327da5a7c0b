// Option checks shared by the pool and its policies: a bad value fails at construction with a RangeError
// naming the field, never later inside a task.
import type { EnqueueOptions } from './task.js';

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

/** Describes the first bad field of `enqueue`'s `options`, if any (the call then rejects with a RangeError). */
export function invalidEnqueueOption(options: EnqueueOptions): string | undefined {
  const { priority, timeout, retries } = options;
  if (priority !== undefined && !Number.isFinite(priority))
    return `priority must be a finite number, got ${priority}`;
  if (timeout !== undefined && !(timeout >= 0)) return `timeout must be a number >= 0, got ${timeout}`;
  if (retries !== undefined && !(retries >= 0)) return `retries must be a number >= 0, got ${retries}`;
  const { paced } = options;
  if (paced !== undefined && typeof paced !== 'boolean')
    return `paced must be a boolean, got ${String(paced)}`;
  return undefined;
}
