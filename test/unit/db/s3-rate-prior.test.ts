import { describe, expect, it } from 'vitest';
import { openDatabase, S3_PREFIX_WRITES_PER_SECOND } from '../../../lib/db/index.js';
import { withS3RatePrior } from '../../../lib/db/s3-rate-prior.js';

describe('withS3RatePrior: the pool knows no S3 limit, the Database gives it one', () => {
  it("starts an autotuned pool at S3's documented per-prefix write rate", () => {
    expect(S3_PREFIX_WRITES_PER_SECOND).toBe(3500);
    expect(withS3RatePrior({ concurrency: 'auto' }).autotune?.throttle?.initialRate).toBe(3500);
    const enabled = withS3RatePrior({
      concurrency: 20,
      autotune: { enabled: true, throttle: { beta: 0.8 } },
    });
    expect(enabled.autotune).toEqual({ enabled: true, throttle: { beta: 0.8, initialRate: 3500 } });
  });

  it("keeps the caller's starting rate and leaves a pool that is not autotuned alone", () => {
    const own = { concurrency: 'auto' as const, autotune: { throttle: { initialRate: 100 } } };
    expect(withS3RatePrior(own)).toBe(own);
    const fixed = { concurrency: 50, autotune: { throttle: { beta: 0.5 } } };
    expect(withS3RatePrior(fixed)).toBe(fixed);
  });

  it("openDatabase's autotuned pool starts at that rate", async () => {
    const db = openDatabase('memory://rate-prior-bucket/data', { pool: { concurrency: 'auto' } });
    try {
      expect(db.pool?.autotuner?.state().rateLimit).toBe(S3_PREFIX_WRITES_PER_SECOND);
    } finally {
      await db.disconnect();
    }
  });
});
