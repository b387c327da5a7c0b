// One bench:throttle run in its own process (spawned by bench/throttle.ts), on simulated time: N writes
// spread evenly over P prefixes of the in-process S3 model (3,500 writes/s per prefix, lognormal latency
// 20 ms median / 80 ms p99), through one engine. At `halveAtMs` the model's limit halves.
import { AdaptiveRetryStrategy, StandardRetryStrategy } from '@smithy/core/retry';
import { MemoryBucket, MemoryObjectStore } from '../../lib/db/memory-object-store.js';
import { S3_PREFIX_WRITES_PER_SECOND } from '../../lib/db/s3-rate-prior.js';
import { systemClock } from '../../lib/local/s3-behaviour/clock.js';
import { S3BehaviourModel } from '../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { type AutotuneOptions, Autotuner } from '../../lib/pool/autotune/index.js';
import { ExecutorPool } from '../../lib/pool/index.js';
import { reportToParent } from '../support/child.js';
import { sdkSend } from './sdk-retry-loop.js';
import { VirtualTime } from './virtual-time.js';

export type ThrottleEngine =
  | 'autotune'
  | 'fixed-10'
  | 'fixed-50'
  | 'fixed-200'
  | 'promise-all'
  | 'sdk-adaptive';

export interface ThrottleRunConfig {
  engine: ThrottleEngine;
  writes: number;
  prefixes: number;
  writesPerSecond: number;
  halveAtMs: number;
  bucketMs: number;
}

/** One time bucket of the run. Rates are per second; `concurrency` is the cap summed over prefixes. */
export interface Bucket {
  t: number;
  ok: number;
  throttled: number;
  requests: number;
  inFlight: number;
  concurrency: number;
}

export interface ThrottleRunResult {
  simulatedMs: number;
  wallMs: number;
  succeeded: number;
  failed: number;
  requests: number;
  throttled: number;
  retries: number;
  /** Simulated ms when 95% of the writes had settled (the end of the steady state). */
  settled95Ms: number;
  buckets: Bucket[];
  /** Autotune only: rate cuts and the final state of prefix 0. */
  tuner?: { cuts: number; throttles: number; finalLimit: number; longRttMs: number };
}

const config = JSON.parse(process.argv[2] ?? '{}') as ThrottleRunConfig;
const time = new VirtualTime();
time.install();
// Wall time comes from hrtime: Date.now and performance.now are simulated from here on.
const hrStart = process.hrtime.bigint();

const model = new S3BehaviourModel({
  writesPerSecond: config.writesPerSecond,
  latency: { medianMs: 20, p99Ms: 80 },
  clock: systemClock,
  seed: 7,
});
const store = new MemoryObjectStore({ bucket: new MemoryBucket('throttle'), model });

const buckets: Bucket[] = [];
function bucketAt(now: number): Bucket {
  const index = Math.floor(now / config.bucketMs);
  while (buckets.length <= index) {
    buckets.push({
      t: buckets.length * config.bucketMs,
      ok: 0,
      throttled: 0,
      requests: 0,
      inFlight: 0,
      concurrency: 0,
    });
  }
  return buckets[index]!;
}

let inFlight = 0;
const body = JSON.stringify({
  customer: 'c-1',
  sku: 'SKU-1',
  quantity: 1,
  status: 'pending',
  notes: 'x'.repeat(120),
});
async function put(prefix: number, i: number, signal?: AbortSignal): Promise<void> {
  inFlight += 1;
  const b = () => bucketAt(performance.now());
  try {
    await store.put({ key: `t=tenant-${prefix}/r=orders/id=o-${i}.json`, body }, signal ? { signal } : {});
    const bucket = b();
    bucket.ok += 1;
    bucket.requests += 1;
  } catch (error) {
    const bucket = b();
    bucket.requests += 1;
    if ((error as { name?: string }).name === 'SlowDown') bucket.throttled += 1;
    throw error;
  } finally {
    inFlight -= 1;
  }
}

let settled = 0;
let settled95Ms = 0;
const target95 = Math.ceil(config.writes * 0.95);
let succeeded = 0;
let failed = 0;
function onSettled(ok: boolean): void {
  settled += 1;
  if (ok) succeeded += 1;
  else failed += 1;
  if (settled === target95) settled95Ms = performance.now();
}

const pools: ExecutorPool[] = [];
const tuners: Autotuner[] = [];
let retries = 0;
const work: Promise<unknown>[] = [];

if (config.engine === 'promise-all' || config.engine === 'sdk-adaptive') {
  // One client per process, as in the handler: its retry strategy (and the adaptive rate limiter) is shared
  // by every prefix. Default client settings: 3 attempts.
  const strategy =
    config.engine === 'sdk-adaptive'
      ? new AdaptiveRetryStrategy(async () => 3)
      : new StandardRetryStrategy(3);
  for (let i = 0; i < config.writes; i++) {
    const prefix = i % config.prefixes;
    work.push(
      sdkSend(
        strategy,
        () => put(prefix, i),
        () => {
          retries += 1;
        },
      ).then(
        () => onSettled(true),
        () => onSettled(false),
      ),
    );
  }
} else {
  for (let p = 0; p < config.prefixes; p++) {
    const fixed = config.engine === 'autotune' ? 10 : Number(config.engine.slice('fixed-'.length));
    // The pool owns retries (the S3 client of a pool makes one attempt per call): pool defaults.
    const pool = new ExecutorPool({ concurrency: fixed });
    pool.on('pool:taskRetry', () => {
      retries += 1;
    });
    if (config.engine === 'autotune') {
      // BENCH_AUTOTUNE='{"throttle":{"beta":0.95}}' tries other settings; the committed run uses the defaults
      // with S3's per-prefix write rate as the prior.
      const extra = JSON.parse(process.env.BENCH_AUTOTUNE ?? '{}') as AutotuneOptions;
      const throttle = { initialRate: S3_PREFIX_WRITES_PER_SECOND, ...extra.throttle };
      tuners.push(new Autotuner(pool, { maxConcurrency: 1000, ...extra, throttle }));
    }
    pools.push(pool);
  }
  for (let i = 0; i < config.writes; i++) {
    const prefix = i % config.prefixes;
    work.push(
      pools[prefix]!.enqueue(({ signal }) => put(prefix, i, signal)).then(
        () => onSettled(true),
        () => onSettled(false),
      ),
    );
  }
}

// Sample caps and in-flight work once per bucket.
function sample(): void {
  const bucket = bucketAt(performance.now());
  bucket.inFlight = inFlight;
  bucket.concurrency = pools.length > 0 ? pools.reduce((sum, p) => sum + p.concurrency, 0) : inFlight;
  if (process.env.BENCH_TRACE === '1' && tuners[0] !== undefined) {
    const st = tuners[0].state();
    console.error(
      `${(performance.now() / 1000).toFixed(1)} limit=${st.limit} grad=${st.gradientLimit.toFixed(0)} rate=${st.rateLimit.toFixed(0)} rc=${st.rateConcurrency.toFixed(0)} rtt=${st.longRttMs.toFixed(1)} cuts=${st.cuts}`,
    );
  }
  if (settled < config.writes) setTimeout(sample, config.bucketMs);
}
sample();
setTimeout(() => model.setRates({ writesPerSecond: config.writesPerSecond / 2 }), config.halveAtMs);

let done = false;
void Promise.all(work).then(() => {
  done = true;
});
await time.run(() => done);
const simulatedMs = performance.now();
const stats = model.stats().total;
const tuner = tuners[0];
const result: ThrottleRunResult = {
  simulatedMs,
  wallMs: Number(process.hrtime.bigint() - hrStart) / 1e6,
  succeeded,
  failed,
  requests: stats.requests,
  throttled: stats.throttled,
  retries,
  settled95Ms,
  buckets,
  ...(tuner !== undefined
    ? {
        tuner: {
          cuts: tuners.reduce((s, t) => s + t.state().cuts, 0),
          throttles: tuners.reduce((s, t) => s + t.state().throttles, 0),
          finalLimit: tuner.limit,
          longRttMs: tuner.state().longRttMs,
        },
      }
    : {}),
};
reportToParent(result);
