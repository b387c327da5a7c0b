import type { ExecutorPoolOptions } from '../pool/index.js';

/**
 * S3's documented baseline for writes to one prefix: 3,500 PUT/COPY/POST/DELETE requests per second. A
 * Database is one tenant's prefix, so an autotuned pool starts its throttle-driven rate there (the tuner
 * probes past it if S3 grants more, and the first SlowDown cuts it if S3 grants less).
 */
export const S3_PREFIX_WRITES_PER_SECOND = 3500;

/** `options` with S3's per-prefix write rate as the autotuner's starting rate, unless the caller set one. */
export function withS3RatePrior(options: ExecutorPoolOptions): ExecutorPoolOptions {
  const autotuned = options.concurrency === 'auto' || options.autotune?.enabled === true;
  if (!autotuned || options.autotune?.throttle?.initialRate !== undefined) return options;
  const autotune = options.autotune ?? {};
  return {
    ...options,
    autotune: { ...autotune, throttle: { ...autotune.throttle, initialRate: S3_PREFIX_WRITES_PER_SECOND } },
  };
}
