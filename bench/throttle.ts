// npm run bench:throttle — adaptive concurrency against S3's per-prefix write limit, on the in-process S3
// behaviour model at the true limits (3,500 writes/s per prefix, 20 ms median / 80 ms p99 latency): 100k
// writes over 1, 4 and 16 prefixes through autotune, fixed concurrency 10/50/200 (one pool per prefix, as
// each tenant's Database has its own), unbounded Promise.all (SDK standard retries) and Promise.all with the
// SDK's adaptive retry mode (its client-side CUBIC rate limiter). Mid-run (when an ideal engine would be
// halfway) the limit halves. Every run is its own process on simulated time (bench/throttle/virtual-time.ts),
// so results are exact and repeatable and do not depend on this machine's load.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';
import { renderLineChart, type Series } from './support/svg-chart.js';
import type { Bucket, ThrottleEngine, ThrottleRunConfig, ThrottleRunResult } from './throttle/engine.js';

const script = fileURLToPath(new URL('./throttle/engine.ts', import.meta.url));
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
const quick = process.env.BENCH_QUICK === '1';
const WRITES = quick ? 20_000 : 100_000;
const LIMIT = 3500;
const BUCKET_MS = 100;
const WINDOW_MS = 1000;
const allEngines: ThrottleEngine[] = [
  'autotune',
  'fixed-10',
  'fixed-50',
  'fixed-200',
  'promise-all',
  'sdk-adaptive',
];
// BENCH_ENGINES=autotune (comma-separated) runs a subset while tuning; the committed results run them all.
const only = process.env.BENCH_ENGINES?.split(',');
const engines = only === undefined ? allEngines : allEngines.filter((e) => only.includes(e));
const prefixCounts = (process.env.BENCH_PREFIXES ?? '1,4,16').split(',').map(Number);

/**
 * Goodput (writes/s) and 503 share over the whole buckets inside [from, to) ms. Time is counted for those
 * whole buckets (recorded or not: a run that ended early is charged for the time it did nothing), so a
 * phase that ends mid-bucket is not charged for writes it was not credited with.
 */
function over(
  buckets: readonly Bucket[],
  from: number,
  to: number,
): { goodput: number; throttledShare: number } {
  let ok = 0;
  let throttled = 0;
  let requests = 0;
  const ms = (Math.floor(to / BUCKET_MS) - Math.ceil(from / BUCKET_MS)) * BUCKET_MS;
  for (const b of buckets) {
    if (b.t < from || b.t + BUCKET_MS > to) continue;
    ok += b.ok;
    throttled += b.throttled;
    requests += b.requests;
  }
  return { goodput: (ok * 1000) / Math.max(1, ms), throttledShare: throttled / Math.max(1, requests) };
}

/**
 * Convergence within the phase [from, to) against `limit`: the first time t (100 ms steps) from which
 * - the goodput over [t, to) averages >= 90% of the limit, and
 * - no later window (1 s, or the whole phase when shorter) has more than 5% of its requests answered 503,
 * with at least one window left after t. `strict` also demands every later window >= 90% on its own
 * (the stricter, noisier rule, reported next to it). Seconds after `from`, or undefined if it never holds.
 */
function convergence(
  buckets: readonly Bucket[],
  from: number,
  to: number,
  limit: number,
  strict: boolean,
): number | undefined {
  const window = Math.min(WINDOW_MS, Math.floor((to - from) / BUCKET_MS) * BUCKET_MS);
  if (window <= 0) return undefined;
  let converged: number | undefined;
  for (let start = from; start + window <= to; start += BUCKET_MS) {
    const w = over(buckets, start, start + window);
    const good = w.throttledShare <= 0.05 && (!strict || w.goodput >= 0.9 * limit);
    if (!good) converged = undefined;
    else if (converged === undefined && (strict || over(buckets, start, to).goodput >= 0.9 * limit))
      converged = start;
  }
  return converged === undefined ? undefined : (converged - from) / 1000;
}

const rows: Row[] = [];
const runs: Record<string, { config: ThrottleRunConfig; result: Omit<ThrottleRunResult, 'buckets'> }> = {};
const charts: Record<number, Map<ThrottleEngine, Bucket[]>> = {};
for (const prefixes of prefixCounts) {
  charts[prefixes] = new Map();
  const halveAtMs = Math.round((WRITES / 2 / (LIMIT * prefixes)) * 1000);
  for (const engine of engines) {
    const config: ThrottleRunConfig = {
      engine,
      writes: WRITES,
      prefixes,
      writesPerSecond: LIMIT,
      halveAtMs,
      bucketMs: BUCKET_MS,
    };
    const { result, peakRssBytes } = await runInChild<ThrottleRunResult>(script, [JSON.stringify(config)]);
    const full = LIMIT * prefixes;
    const before = over(result.buckets, 0, halveAtMs);
    const end = Math.max(result.settled95Ms, halveAtMs);
    const after = result.settled95Ms > halveAtMs ? over(result.buckets, halveAtMs, end) : undefined;
    const converge = convergence(result.buckets, 0, halveAtMs, full, false);
    const convergeStrict = convergence(result.buckets, 0, halveAtMs, full, true);
    const hasAfter = result.settled95Ms > halveAtMs;
    const reconverge = hasAfter ? convergence(result.buckets, halveAtMs, end, full / 2, false) : undefined;
    const reconvergeStrict = hasAfter
      ? convergence(result.buckets, halveAtMs, end, full / 2, true)
      : undefined;
    rows.push({
      prefixes,
      engine,
      'ok writes': result.succeeded,
      'failed writes': result.failed,
      'goodput % of limit': Math.round((100 * before.goodput) / full),
      '503 % of requests': +((100 * result.throttled) / Math.max(1, result.requests)).toFixed(2),
      retries: result.retries,
      'converged s': converge ?? 'no',
      'goodput % after halving': after === undefined ? '-' : Math.round((100 * after.goodput) / (full / 2)),
      're-converged s': reconverge ?? (after === undefined ? '-' : 'no'),
      'converged s, every window': convergeStrict ?? 'no',
      're-converged s, every window': reconvergeStrict ?? (after === undefined ? '-' : 'no'),
      'simulated s': +(result.simulatedMs / 1000).toFixed(1),
      'wall s': +(result.wallMs / 1000).toFixed(1),
      'peak RSS MB': Math.round(peakRssBytes / 2 ** 20),
    });
    const { buckets, ...summary } = result;
    runs[`${prefixes}/${engine}`] = { config, result: summary };
    charts[prefixes]!.set(engine, buckets);
    console.error(`done: ${prefixes} prefixes, ${engine}`);
    if (process.env.BENCH_TRACE === '1') {
      // Per 100 ms: accepted/s, 503/s, summed cap.
      console.error(
        buckets
          .map((b) => `${(b.t / 1000).toFixed(1)} ok=${b.ok * 10} 503=${b.throttled * 10} c=${b.concurrency}`)
          .join('\n'),
      );
    }
  }
}

// A subset run (BENCH_ENGINES / BENCH_PREFIXES) prints its table but leaves the committed results alone.
const subset = only !== undefined || process.env.BENCH_PREFIXES !== undefined;
writeResults(subset ? 'throttle-subset' : 'throttle', rows, {
  model: {
    writesPerSecondPerPrefix: LIMIT,
    latency: { medianMs: 20, p99Ms: 80 },
    burstSeconds: 0.1,
    seed: 7,
  },
  writes: WRITES,
  time: 'simulated (virtual clock in each child process); wall s is the real time the simulation took',
  definitions: {
    goodput: 'accepted writes/s from start until the limit halves, as % of limit x prefixes',
    goodputAfterHalving:
      'accepted writes/s from the halving until 95% of writes settled, as % of the halved limit',
    converged: `first time t from which the goodput until the phase ends averages >= 90% of the limit and no later ${WINDOW_MS} ms window (or the whole phase, if shorter) has > 5% of its requests 503`,
    convergedEveryWindow: `first time t from which every later ${WINDOW_MS} ms window (or the whole phase, if shorter) holds >= 90% of the limit with <= 5% of its requests 503`,
  },
  runs,
});

// Charts: per prefix count, goodput, concurrency (pool engines: summed caps; Promise.all engines have every
// write in flight at once, off this scale) and 503s over time, in 500 ms steps for readability.
function series(
  buckets: readonly Bucket[],
  pick: (b: Bucket) => number,
  mean: boolean,
): Array<[number, number]> {
  const points: Array<[number, number]> = [];
  const per = 5;
  for (let i = 0; i + per <= buckets.length; i += per) {
    const group = buckets.slice(i, i + per);
    const sum = group.reduce((s, b) => s + pick(b), 0);
    points.push([
      (group[0]!.t + (per * BUCKET_MS) / 2) / 1000,
      mean ? sum / per : (sum * 1000) / (per * BUCKET_MS),
    ]);
  }
  return points;
}
for (const prefixes of subset ? [] : prefixCounts) {
  const byEngine = charts[prefixes]!;
  const full = LIMIT * prefixes;
  const make = (
    pick: (b: Bucket) => number,
    mean: boolean,
    only?: (e: ThrottleEngine) => boolean,
  ): Series[] =>
    [...byEngine]
      .filter(([engine]) => only?.(engine) ?? true)
      .map(([engine, buckets]) => ({ name: engine, points: series(buckets, pick, mean) }));
  const svg = renderLineChart({
    title: `bench:throttle — ${WRITES.toLocaleString('en-US')} writes over ${prefixes} prefix${prefixes > 1 ? 'es' : ''} (S3 model, simulated time; limit halves mid-run)`,
    xLabel: 'simulated seconds',
    panels: [
      {
        title: 'accepted writes/s',
        yLabel: 'writes/s',
        series: make((b) => b.ok, false),
        references: [
          { y: full, label: 'limit' },
          { y: full / 2, label: 'halved limit' },
        ],
      },
      {
        title: 'concurrency (sum of pool caps; Promise.all engines omitted: every write in flight)',
        yLabel: 'concurrency',
        series: make(
          (b) => b.concurrency,
          true,
          (e) => e !== 'promise-all' && e !== 'sdk-adaptive',
        ),
      },
      { title: '503 SlowDown answers/s', yLabel: '503/s', series: make((b) => b.throttled, false) },
    ],
  });
  const name = prefixes === 1 ? 'throttle.svg' : `throttle-${prefixes}-prefixes.svg`;
  writeFileSync(`${resultsDir}${name}`, svg);
  console.log(`written: bench/results/${name}`);
}
