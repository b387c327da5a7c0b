import { type AutotuneOptions, autotune } from '../pool/autotune/index.js';
import type { TunerCompanion } from '../pool/companions.js';

/**
 * S3's documented baseline for writes to one prefix: 3,500 PUT/COPY/POST/DELETE requests per second. A
 * Database is one tenant's prefix, so an autotuned pool starts its throttle-driven rate there (the tuner
 * probes past it if S3 grants more, and the first SlowDown cuts it if S3 grants less).
 */
export const S3_PREFIX_WRITES_PER_SECOND = 3500;

/**
 * An autotuner for a pool writing to one S3 prefix: `autotune(options)` starting from S3's per-prefix write
 * rate unless the options set a starting rate. `openDatabase` uses it for `concurrency: 'auto'`.
 * @example openDatabase('s3://bucket/app', { pool: { concurrency: 'auto', autotune: s3Autotune({ maxConcurrency: 200 }) } })
 */
export function s3Autotune(options: AutotuneOptions = {}): TunerCompanion {
  const initialRate = options.throttle?.initialRate ?? S3_PREFIX_WRITES_PER_SECOND;
  return autotune({ ...options, throttle: { ...options.throttle, initialRate } });
}
