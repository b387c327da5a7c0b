import { InvalidPermitRequestError, InvalidSemaphoreOptionsError } from './errors.js';
import { clampRate } from './rate-law.js';
import { floorToRateGrid } from './rate-schedule.js';
import type { BookingReport, BookOptions } from './rate-types.js';

const isPositive = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** Checks the options every rate budget shares; throws `InvalidSemaphoreOptionsError` naming the option. */
export function checkBudgetOptions(options: {
  name: unknown;
  ceiling: unknown;
  startRate?: unknown;
  reportTimeoutMs?: unknown;
}): void {
  if (typeof options.name !== 'string' || options.name.length === 0)
    throw new InvalidSemaphoreOptionsError(
      `rate budget: name must be a non-empty string, got ${String(options.name)}`,
    );
  const fail = (why: string) => new InvalidSemaphoreOptionsError(`rate budget "${options.name}": ${why}`);
  if (!isPositive(options.ceiling) || floorToRateGrid(options.ceiling) <= 0)
    throw fail(`ceiling must be a number of writes per second >= 0.000001, got ${String(options.ceiling)}`);
  const { startRate } = options;
  if (
    startRate !== undefined &&
    !(isPositive(startRate) && floorToRateGrid(startRate) > 0 && startRate <= (options.ceiling as number))
  )
    throw fail(`startRate must be a number of writes per second in (0, ceiling], got ${String(startRate)}`);
  // A Node timer past 2^31 - 1 ms fires at once.
  const { reportTimeoutMs } = options;
  if (reportTimeoutMs !== undefined && !(isPositive(reportTimeoutMs) && reportTimeoutMs < 2 ** 31))
    throw fail(`reportTimeoutMs must be a positive number of ms below 2^31, got ${String(reportTimeoutMs)}`);
}

/** Checks a booking's arguments (`InvalidPermitRequestError` naming the bad one). */
export function checkBook(name: string, options: BookOptions): void {
  const fail = (why: string) => new InvalidPermitRequestError(`rate budget "${name}": ${why}`);
  const { writes, latestStart, writeBy } = options;
  if (!(Number.isInteger(writes) && writes >= 1))
    throw fail(`writes must be a whole number >= 1, got ${String(writes)}`);
  if (typeof latestStart !== 'number' || !Number.isFinite(latestStart))
    throw fail(`latestStart must be epoch milliseconds, got ${String(latestStart)}`);
  if (typeof writeBy !== 'number' || !Number.isFinite(writeBy))
    throw fail(`writeBy must be epoch milliseconds, got ${String(writeBy)}`);
  const { earliestStart } = options;
  if (earliestStart !== undefined && (typeof earliestStart !== 'number' || !Number.isFinite(earliestStart)))
    throw fail(`earliestStart must be epoch milliseconds, got ${String(earliestStart)}`);
  const { spanMs } = options;
  if (spanMs !== undefined && !(typeof spanMs === 'number' && spanMs > 0))
    throw fail(`spanMs must be a number of milliseconds > 0, got ${String(spanMs)}`);
}

/** Checks a booking's report (`InvalidPermitRequestError` naming the bad field). */
export function checkReport(name: string, report: BookingReport): void {
  const fail = (why: string) => new InvalidPermitRequestError(`rate budget "${name}": report ${why}`);
  if (typeof report !== 'object' || report === null) throw fail(`must be an object, got ${String(report)}`);
  if (!isCount(report.accepted)) throw fail(`accepted must be a count >= 0, got ${String(report.accepted)}`);
  if (!isCount(report.throttled))
    throw fail(`throttled must be a count >= 0, got ${String(report.throttled)}`);
  if (typeof report.starved !== 'boolean')
    throw fail(`starved must be a boolean, got ${String(report.starved)}`);
}

/** Where a budget whose item is missing starts: `startRate` on the rate grid within the law's bounds, else the ceiling. */
export function startRateOf(startRate: number | undefined, ceiling: number): number {
  return startRate === undefined ? ceiling : clampRate(floorToRateGrid(startRate), ceiling);
}
