import { InvalidPermitRequestError, InvalidSemaphoreOptionsError } from './errors.js';
import type { AcquireOptions } from './types.js';

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function isPositiveDuration(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** Checks an acquire request against the semaphore's limit and returns the effective `min`. */
export function checkPermitRequest(name: string, limit: number, k: number, options: AcquireOptions): number {
  const fail = (why: string) => new InvalidPermitRequestError(`semaphore "${name}": ${why}`);
  if (!isPositiveInteger(k)) throw fail(`k must be a positive integer, got ${String(k)}`);
  if (k > limit) throw fail(`k = ${k} exceeds the limit ${limit}; it could never be granted`);
  const min = options.min ?? k;
  if (!isPositiveInteger(min)) throw fail(`min must be a positive integer, got ${String(min)}`);
  if (min > k) throw fail(`min = ${min} exceeds k = ${k}`);
  if (options.deadline !== undefined && !Number.isFinite(options.deadline)) {
    throw fail(`deadline must be epoch milliseconds, got ${String(options.deadline)}`);
  }
  if (options.leaseMs !== undefined) checkLeaseMs(name, options.leaseMs);
  if (options.requests !== undefined && !(Number.isFinite(options.requests) && options.requests >= 0))
    throw fail(`requests must be a finite number >= 0, got ${String(options.requests)}`);
  return min;
}

export function checkLeaseMs(name: string, ms: number): void {
  if (!isPositiveDuration(ms)) {
    throw new InvalidPermitRequestError(
      `semaphore "${name}": lease length must be a positive number of ms, got ${String(ms)}`,
    );
  }
}

/** Validates the options shared by every semaphore implementation. */
export function checkSemaphoreOptions(options: { name: string; limit: number; leaseMs: number }): void {
  const fail = (why: string) => new InvalidSemaphoreOptionsError(`semaphore "${options.name}": ${why}`);
  if (typeof options.name !== 'string' || options.name.length === 0) {
    throw new InvalidSemaphoreOptionsError('semaphore name must be a non-empty string');
  }
  if (!isPositiveInteger(options.limit)) throw fail(`limit must be a positive integer, got ${options.limit}`);
  if (!isPositiveDuration(options.leaseMs)) throw fail(`leaseMs must be positive, got ${options.leaseMs}`);
}

/** The tuning both DynamoDB semaphores share: shard count, backoff and give-back bounds. */
export interface DynamoTuning {
  shards: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  giveBackTimeoutMs: number;
}

/**
 * A DynamoDB semaphore's tuning with the defaults both kinds share (backoff 20..500 ms, give-back bound
 * 2 s), checked against its limit; throws `InvalidSemaphoreOptionsError`.
 */
export function resolveDynamoTuning(
  name: string,
  limit: number,
  shards: number,
  options: Partial<Omit<DynamoTuning, 'shards'>>,
): DynamoTuning {
  const tuning: DynamoTuning = {
    shards,
    backoffBaseMs: options.backoffBaseMs ?? 20,
    backoffCapMs: options.backoffCapMs ?? 500,
    giveBackTimeoutMs: options.giveBackTimeoutMs ?? 2_000,
  };
  checkDynamoTuning(name, limit, tuning);
  return tuning;
}

function checkDynamoTuning(name: string, limit: number, tuning: DynamoTuning): void {
  const fail = (why: string) => new InvalidSemaphoreOptionsError(`semaphore "${name}": ${why}`);
  const { shards, backoffBaseMs, backoffCapMs, giveBackTimeoutMs } = tuning;
  if (!Number.isInteger(shards) || shards < 1 || shards > limit)
    throw fail(`shards must be an integer in 1..limit (${limit}), got ${shards}`);
  if (!(backoffBaseMs > 0 && backoffCapMs >= backoffBaseMs))
    throw fail(`need 0 < backoffBaseMs <= backoffCapMs, got ${backoffBaseMs} and ${backoffCapMs}`);
  if (!(giveBackTimeoutMs > 0 && Number.isFinite(giveBackTimeoutMs)))
    throw fail(`giveBackTimeoutMs must be a positive number, got ${giveBackTimeoutMs}`);
}
