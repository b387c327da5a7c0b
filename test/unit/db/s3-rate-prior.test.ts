import { describe, expect, it } from 'vitest';
import {
  type Database,
  openDatabase,
  S3_PREFIX_WRITES_PER_SECOND,
  type S3ObjectStore,
  s3Autotune,
} from '../../../lib/db/index.js';
import type { UndiciHttpHandler } from '../../../lib/db/undici-http-handler.js';
import { Autotuner, ExecutorPool } from '../../../lib/pool/index.js';

/** The Autotuner a pool built with `options` attached (a test asserts it is one). */
function tunerOf(pool: ExecutorPool | undefined): Autotuner {
  const tuner = pool?.autotuner;
  if (!(tuner instanceof Autotuner)) throw new TypeError('the pool has no Autotuner');
  return tuner;
}

describe('s3Autotune: the pool knows no S3 limit, the Database gives it one', () => {
  it("starts an autotuned pool at S3's documented per-prefix write rate", () => {
    expect(S3_PREFIX_WRITES_PER_SECOND).toBe(3500);
    const pool = new ExecutorPool({ concurrency: 'auto', autotune: s3Autotune() });
    expect(tunerOf(pool).state().rateLimit).toBe(3500);
    const tuned = new ExecutorPool({ concurrency: 20, autotune: s3Autotune({ throttle: { beta: 0.8 } }) });
    expect(tunerOf(tuned).options.throttle).toMatchObject({ beta: 0.8, initialRate: 3500 });
  });

  it("keeps the caller's starting rate", () => {
    const pool = new ExecutorPool({
      concurrency: 'auto',
      autotune: s3Autotune({ throttle: { initialRate: 100 } }),
    });
    expect(tunerOf(pool).state().rateLimit).toBe(100);
  });

  it("openDatabase's pool with concurrency 'auto' gets an S3-primed tuner", async () => {
    const db = openDatabase('memory://rate-prior-bucket/data', { pool: { concurrency: 'auto' } });
    try {
      expect(tunerOf(db.pool).state().rateLimit).toBe(S3_PREFIX_WRITES_PER_SECOND);
    } finally {
      await db.disconnect();
    }
  });

  it("openDatabase keeps the caller's own tuner and leaves a fixed pool untuned", async () => {
    const own = openDatabase('memory://rate-prior-bucket/own', {
      pool: { concurrency: 'auto', autotune: s3Autotune({ throttle: { initialRate: 200 } }) },
    });
    const fixed = openDatabase('memory://rate-prior-bucket/fixed', { pool: { concurrency: 50 } });
    try {
      expect(tunerOf(own.pool).state().rateLimit).toBe(200);
      expect(fixed.pool?.autotuner).toBeUndefined();
    } finally {
      await Promise.all([own.disconnect(), fixed.disconnect()]);
    }
  });

  it("sizes openDatabase's own client for the tuner's ceiling, not where the pool starts", async () => {
    const socketsOf = (db: Database) => {
      const handler = (db.store as S3ObjectStore).client.config.requestHandler;
      return (handler as UndiciHttpHandler).httpHandlerConfigs().maxSockets;
    };
    const auto = openDatabase('http://k:s@127.0.0.1:1/bucket/auto', { pool: { concurrency: 'auto' } });
    const capped = openDatabase('http://k:s@127.0.0.1:1/bucket/capped', {
      pool: { concurrency: 'auto', autotune: s3Autotune({ maxConcurrency: 400 }) },
    });
    try {
      expect(socketsOf(auto)).toBe(1000);
      expect(socketsOf(capped)).toBe(400);
    } finally {
      await Promise.all([auto.disconnect(), capped.disconnect()]);
    }
  });
});
