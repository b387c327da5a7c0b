// npm run bench:seed — the seed's benchmark, reproduced: three engines (separate pools, one shared pool,
// Promise.all with no pool) inserting ~300-byte records through Database on memory:// (a) with zero latency,
// (b) under the S3 behaviour model (20 ms median latency, 3,500 writes/s per prefix), and one run against the
// embedded S3 emulator. Every run is its own process (bench/seed/engine.ts) so peak RSS is per engine.
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startLocalAws } from '../lib/local/index.js';
import type { Engine, SeedRunConfig, SeedRunResult } from './seed/engine.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';

const script = fileURLToPath(new URL('./seed/engine.ts', import.meta.url));
const quick = process.env.BENCH_QUICK === '1';

interface Cell {
  scenario: string;
  engine: Engine;
  ops: number;
  concurrency: number | undefined;
  databases: number;
  target: SeedRunConfig['target'];
}

const zero = { kind: 'memory', latencyMs: 0 } as const;
const s3Model = { kind: 'memory', latencyMs: 20, writesPerSecond: 3500 } as const;
const cells: Cell[] = [];

// (a) zero latency: the full matrix. Promise.all has no concurrency knob, so it runs once per (ops, dbs).
for (const ops of quick ? [1_000, 10_000] : [1_000, 5_000, 10_000, 100_000]) {
  for (const databases of [1, 4]) {
    for (const concurrency of quick ? [100] : [10, 50, 100, 200]) {
      for (const engine of ['separate-pools', 'shared-pool'] as const) {
        cells.push({ scenario: 'a: zero latency', engine, ops, concurrency, databases, target: zero });
      }
    }
    cells.push({
      scenario: 'a: zero latency',
      engine: 'promise-all',
      ops,
      concurrency: undefined,
      databases,
      target: zero,
    });
  }
}

// (b) S3 model, a representative subset: at 20 ms per request, concurrency c sustains at most c / 0.02 s
// per pool, so low concurrency x many ops is minutes of waiting that shows nothing new. Subset: 1k and 10k
// ops at concurrency 50 (under the 3,500/s limit for one prefix) and 200 (over it), 1 and 4 Databases
// (one prefix each); plus 100k ops over 4 Databases at concurrency 200 (about 7 s at 4 x 3,500/s).
const modelled: Array<[number, number, number]> = [];
for (const ops of quick ? [1_000] : [1_000, 10_000]) {
  for (const databases of [1, 4])
    for (const concurrency of [50, 200]) modelled.push([ops, concurrency, databases]);
}
if (!quick) modelled.push([100_000, 200, 4]);
const seenPromiseAll = new Set<string>();
for (const [ops, concurrency, databases] of modelled) {
  for (const engine of ['separate-pools', 'shared-pool'] as const) {
    cells.push({ scenario: 'b: S3 model', engine, ops, concurrency, databases, target: s3Model });
  }
  const key = `${ops}/${databases}`;
  if (!seenPromiseAll.has(key)) {
    seenPromiseAll.add(key);
    cells.push({
      scenario: 'b: S3 model',
      engine: 'promise-all',
      ops,
      concurrency: undefined,
      databases,
      target: s3Model,
    });
  }
}

// One run against the embedded S3 (in this parent process; the client runs in the child).
const aws = await startLocalAws();
const admin = new S3Client(aws.clientConfig.s3);
await admin.send(new CreateBucketCommand({ Bucket: 'seed-bench' }));
admin.destroy();
const emulator = {
  kind: 'emulator',
  connectionString: `http://test:test@${new URL(aws.endpoints.s3).host}/seed-bench/run`,
} as const;
for (const engine of ['separate-pools', 'shared-pool', 'promise-all'] as const) {
  cells.push({
    scenario: 'emulator (fauxqs)',
    engine,
    ops: 1_000,
    concurrency: engine === 'promise-all' ? undefined : 50,
    databases: 1,
    target: emulator,
  });
}

const loadAverageAtStart = loadavg();
const rows: Row[] = [];
const startedAt = performance.now();
for (const [i, cell] of cells.entries()) {
  const config: SeedRunConfig = {
    engine: cell.engine,
    ops: cell.ops,
    concurrency: cell.concurrency ?? 0,
    databases: cell.databases,
    target: cell.target,
  };
  const { result, peakRssBytes } = await runInChild<SeedRunResult>(script, [JSON.stringify(config)]);
  const row: Row = {
    scenario: cell.scenario,
    engine: cell.engine,
    ops: cell.ops,
    concurrency: cell.concurrency ?? 'unbounded',
    dbs: cell.databases,
    'wall ms': Math.round(result.wallMs),
    'ops/s': Math.round((result.succeeded / result.wallMs) * 1000),
    'peak RSS MB': Math.round(peakRssBytes / 1048576),
    '503s': result.throttled,
    failed: result.failed,
    retries: result.retries,
  };
  rows.push(row);
  process.stderr.write(
    `[${i + 1}/${cells.length}] ${cell.scenario} ${cell.engine} ops=${cell.ops} c=${cell.concurrency ?? '-'} dbs=${cell.databases}: ${row['wall ms']} ms, ${row['ops/s']} ops/s, ${row['peak RSS MB']} MB, 503s ${result.throttled}, failed ${result.failed} ${JSON.stringify(result.errorNames)}\n`,
  );
}
await aws.stop();

// Ratios: each row's wall time over the separate-pools row of the same scenario/ops/dbs at the same
// concurrency (Promise.all: at concurrency 100, the Database default).
for (const row of rows) {
  const concurrency =
    row.concurrency === 'unbounded'
      ? row.scenario === 'emulator (fauxqs)'
        ? 50
        : row.scenario === 'b: S3 model'
          ? 200
          : 100
      : row.concurrency;
  const base = rows.find(
    (r) =>
      r.engine === 'separate-pools' &&
      r.scenario === row.scenario &&
      r.ops === row.ops &&
      r.dbs === row.dbs &&
      r.concurrency === concurrency,
  );
  row['wall / separate'] =
    base !== undefined
      ? Number((Number(row['wall ms']) / Math.max(1, Number(base['wall ms']))).toFixed(2))
      : undefined;
}

writeResults(quick ? 'seed-quick' : 'seed', rows, {
  recordBytes: 'about 290 bytes stored per record (user data + id/createdAt/updatedAt/version)',
  model: {
    latency: { medianMs: 20, p99Ms: 80 },
    writesPerSecond: 3500,
    burstSeconds: 0.1,
    prefix: 't=<tenant>/',
  },
  poolDefaults: 'ExecutorPool defaults otherwise: retries 3, retryDelay 1000 ms (full jitter), timeout 30 s',
  loadAverageAtStart,
  loadAverageAtEnd: loadavg(),
  totalSeconds: Math.round((performance.now() - startedAt) / 1000),
});
