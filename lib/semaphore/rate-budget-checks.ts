import { ceilToRateGrid, floorToRateGrid } from './budget-item.js';
import { InvalidPermitRequestError, InvalidSemaphoreOptionsError } from './errors.js';
import type { LeaseReport, TakeOptions } from './rate-types.js';

const isPositive = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** Checks the options every rate budget shares; throws `InvalidSemaphoreOptionsError` naming the option. */
export function checkBudgetOptions(options: {
  name: unknown;
  ceiling: unknown;
  giveBackTimeoutMs?: unknown;
}): void {
  if (typeof options.name !== 'string' || options.name.length === 0)
    throw new InvalidSemaphoreOptionsError(
      `rate budget: name must be a non-empty string, got ${String(options.name)}`,
    );
  const fail = (why: string) => new InvalidSemaphoreOptionsError(`rate budget "${options.name}": ${why}`);
  if (!isPositive(options.ceiling) || floorToRateGrid(options.ceiling) <= 0)
    throw fail(`ceiling must be a number of writes per second >= 0.000001, got ${String(options.ceiling)}`);
  if (options.giveBackTimeoutMs !== undefined && !isPositive(options.giveBackTimeoutMs))
    throw fail(`giveBackTimeoutMs must be a positive number of ms, got ${String(options.giveBackTimeoutMs)}`);
}

/** A take's rates on the rate grid: `want` clamped to the ceiling, `least` never above `want`. */
export interface CheckedTake {
  readonly want: number;
  readonly least: number;
}

/**
 * Checks a take's arguments (`InvalidPermitRequestError` naming the bad one) and puts its rates on the rate
 * grid: `want` above the ceiling is the ceiling, and `least` no more than that.
 */
export function checkTake(name: string, ceiling: number, want: number, options: TakeOptions): CheckedTake {
  const fail = (why: string) => new InvalidPermitRequestError(`rate budget "${name}": ${why}`);
  if (!isPositive(want))
    throw fail(`want must be a positive number of writes per second, got ${String(want)}`);
  const { least, deadline, leaseMs } = options;
  if (!isPositive(least))
    throw fail(`least must be a positive number of writes per second, got ${String(least)}`);
  if (least > want) throw fail(`least = ${least} exceeds want = ${want}`);
  if (typeof deadline !== 'number' || !Number.isFinite(deadline))
    throw fail(`deadline must be epoch milliseconds, got ${String(deadline)}`);
  if (!isPositive(leaseMs)) throw fail(`leaseMs must be a positive number of ms, got ${String(leaseMs)}`);
  const onGrid = { want: floorToRateGrid(Math.min(want, ceiling)), least: ceilToRateGrid(least) };
  // Within a millionth of each other: `want` decides (a grant never exceeds what was asked).
  return { want: Math.max(onGrid.want, 1e-6), least: Math.max(1e-6, Math.min(onGrid.least, onGrid.want)) };
}

/** Checks a release's report (`InvalidPermitRequestError` naming the bad field). */
export function checkReport(name: string, report: LeaseReport): void {
  const fail = (why: string) => new InvalidPermitRequestError(`rate budget "${name}": release report ${why}`);
  if (typeof report !== 'object' || report === null) throw fail(`must be an object, got ${String(report)}`);
  if (!isCount(report.accepted)) throw fail(`accepted must be a count >= 0, got ${String(report.accepted)}`);
  if (!isCount(report.throttled))
    throw fail(`throttled must be a count >= 0, got ${String(report.throttled)}`);
  if (typeof report.starved !== 'boolean')
    throw fail(`starved must be a boolean, got ${String(report.starved)}`);
}
