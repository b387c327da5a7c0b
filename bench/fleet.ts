// npm run bench:fleet — the fleet at internet scale, in simulated time: the real handler (plan, tenant
// pools, its fleet cap, the rate schedule, through its DynamoDB port, dead letters) in many simulated Lambda
// containers, fed by a model of SQS and its event source mapping, writing to a model of S3, its prefix
// budgets' schedule items in a model of DynamoDB (bench/fleet/*). One cell per child process.
//
//   npm run bench:fleet                       the grid (concurrency x tenants x skew, + burst + halving)
//   npm run bench:fleet -- --calibrate        bench:load's configuration, simulated and on the local stack
//   BENCH_FLEET_MESSAGES=1000000              messages per cell (default 1,000,000)
//   BENCH_FLEET_CELLS=c100-t10000-zipf,...    a subset of cells (names as printed), run in the order named
//   BENCH_FLEET_RESULTS=<name>                write bench/results/<name>.json (and <name>-cells.tmp), no chart
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { FleetCellConfig, FleetCellResult } from './fleet/engine.js';
import { costPerMillion, PRICES, PRICES_DATE, PRICES_REGION } from './fleet/prices.js';
import type { Skew } from './fleet/workload.js';
import type { LoadRunConfig, LoadRunResult } from './load/engine.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';
import { renderLineChart, type Series } from './support/svg-chart.js';

const cellScript = fileURLToPath(new URL('./fleet/engine.ts', import.meta.url));
const loadEngine = fileURLToPath(new URL('./load/engine.ts', import.meta.url));
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
const MESSAGES = Number(process.env.BENCH_FLEET_MESSAGES ?? 1_000_000);
const only = process.env.BENCH_FLEET_CELLS?.split(',');
/**
 * BENCH_FLEET_RESULTS=<name>: the run's results go to bench/results/<name>.json and its kept cells to
 * <name>-cells.tmp, no chart is drawn: a quick or partial run that must not replace the committed figures.
 */
const keepAs = process.env.BENCH_FLEET_RESULTS === '' ? undefined : process.env.BENCH_FLEET_RESULTS;
const cellsFile = `${resultsDir}${keepAs ?? 'fleet'}-cells.tmp`;

/** The project's deployed defaults (cdk.json) and the models' AWS figures; each cell overrides a few. */
const base: Omit<FleetCellConfig, 'name' | 'concurrency' | 'tenants' | 'skew' | 'offeredPerSecond'> = {
  messages: MESSAGES,
  batchSize: 100,
  batchingWindowMs: 2_000,
  functionTimeoutMs: 60_000,
  memoryMb: 1024,
  maxReceiveCount: 5,
  duplicateRate: 0.001,
  poisonRate: 0.0001,
  cpuMsPerRecord: 0.3,
  coldStart: { medianMs: 400, p99Ms: 1_200 },
  // 1 ms of a container's CPU per S3 call (the SDK's cost measured here, design.md): the calibration shows
  // that without it a container's requests arrive at one simulated instant and overstate 503s.
  s3: {
    writesPerSecond: 3500,
    latency: { medianMs: 20, p99Ms: 80 },
    internalErrorRate: 0.0001,
    clientCpuMsPerCall: 1,
  },
  // A partition throttled in every second for 300 s splits for heat (AWS documents the isolation of hot
  // items, not how long the heat must last: 300 s is the model's assumption, dynamodb-model.ts).
  dynamo: { writeUnitsPerSecond: 1000, latency: { medianMs: 4, p99Ms: 12 }, splitForHeatAfterSeconds: 300 },
  env: {},
  seed: 17,
};

/** Offered load: 200 messages/s per allowed concurrent invocation (a 100-record batch every 0.5 s). */
const OFFERED_PER_INVOCATION = 200;

function cell(
  concurrency: number,
  tenants: number,
  skew: Skew,
  extra: Partial<FleetCellConfig> = {},
): FleetCellConfig {
  return {
    ...base,
    name: `c${concurrency}-t${tenants}-${skew}`,
    concurrency,
    tenants,
    skew,
    offeredPerSecond: concurrency * OFFERED_PER_INVOCATION,
    ...extra,
  };
}

/**
 * The cells run at 1 M messages each (the count) and cost minutes of one core each (the CPU of
 * each cell: docs/fleet-simulation.md, "What a run costs"), so the grid is cut, not the message count:
 * - default: every value of every axis at least once, in the cheapest cells that carry them: concurrency
 *   1,000 x 100,000 tenants, uniform (the top concurrency and tenant count: a tenant Database opened for
 *   nearly every message, no booking); concurrency 100 x 10,000 tenants under Zipf(1.1) with the mid-run
 *   halving of the hot prefix's limit, and with the hot tenant's burst (a prefix too hot for any cap);
 *   concurrency 10 x 100 tenants, uniform (below every limit). Listed longest first (CPU-s at 1 M on an
 *   idle machine: 453 for c1000-t100000-uniform, about 300 for each event, 117 for c10-t100-uniform), so
 *   two workers taking them in order end together;
 * - `BENCH_FLEET_GRID=cut`: those four, then c1000-t10000-zipf (the hot tenants at 1,000 invocations),
 *   c1000-t100-uniform, c100-t10000-zipf, c10-t100000-zipf, c100-t100000-zipf and c1000-t100000-zipf;
 * - `BENCH_FLEET_GRID=full`: the cross product (3 concurrencies x 3 tenant counts x 2 skews = 18
 *   cells) and the two events.
 */
function grid(): FleetCellConfig[] {
  const cells: FleetCellConfig[] = [];
  // A subset (BENCH_FLEET_CELLS) is picked from every cell there is.
  const mode = only === undefined ? (process.env.BENCH_FLEET_GRID ?? 'default') : 'full';
  if (mode !== 'default' && mode !== 'cut' && mode !== 'full')
    throw new Error(`BENCH_FLEET_GRID=${mode}: expected default, cut or full`);
  if (mode === 'full') {
    for (const tenants of [100, 10_000, 100_000]) {
      for (const skew of ['uniform', 'zipf'] as const) {
        for (const concurrency of [10, 100, 1000]) cells.push(cell(concurrency, tenants, skew));
      }
    }
  }
  // The hot prefix's S3 limit halves 20 s in, under a load it carried before (Zipf over 10,000 tenants at
  // 20,000 messages/s gives tenant 0 15%: ~3,000 writes/s, between the halved 1,750 and the full 3,500).
  const halving = cell(100, 10_000, 'zipf', { halveAtS: 20 });
  // A hot tenant's burst: from 10 s to 30 s half the messages go to tenant 0 (10,000 writes/s at 20,000
  // messages/s offered: no cap can fit that into its prefix's 3,500/s).
  const burst = cell(100, 10_000, 'zipf', { burst: { fromS: 10, toS: 30, share: 0.5 } });
  const events = [
    { ...burst, name: `${burst.name}-burst` },
    { ...halving, name: `${halving.name}-halving` },
  ];
  if (mode === 'full') cells.push(...events, ...shardedCells());
  else {
    // In the order they run: by CPU at 1 M, longest first; the same axis values as c1000-t100-uniform and
    // c10-t100000-zipf would carry, for less CPU.
    cells.push(cell(1000, 100_000, 'uniform'), ...events, cell(10, 100, 'uniform'));
    if (mode === 'cut')
      cells.push(
        cell(1000, 10_000, 'zipf'),
        cell(1000, 100, 'uniform'),
        cell(100, 10_000, 'zipf'),
        cell(10, 100_000, 'zipf'),
        cell(100, 100_000, 'zipf'),
        cell(1000, 100_000, 'zipf'),
      );
  }
  if (only === undefined) return cells;
  // A subset runs in the order it is named, so the longest cells can be put first and two workers end together.
  return only.map((name) => {
    const found = cells.find((c) => c.name === name);
    if (found === undefined)
      throw new Error(
        `BENCH_FLEET_CELLS: no cell named ${name} (names: ${cells.map((c) => c.name).join(', ')})`,
      );
    return found;
  });
}

/**
 * The whale cells (issue 35): c1000-t10000-zipf with the resource sharded. Zipf(1.1) over 10,000 tenants
 * at 200,000 messages/s offered sends tenant 0 ~30,000 writes/s: N = 30,000 / 3,000 rounded up to a power
 * of two = 16 (docs/decisions/sharded-keys.md). `-shard`: S3 has partitioned every shard prefix already
 * (a resource sharded ahead of its peak); `-shard-scaleup`: each tenant's shards start in one partition,
 * which splits after 5 s of being hot (the model's assumption: AWS gives no figure), down to one per shard.
 */
function shardedCells(): FleetCellConfig[] {
  const shards = 16;
  const sharded = (suffix: string, prePartitioned: boolean): FleetCellConfig => {
    const c = cell(1000, 10_000, 'zipf', {
      env: { RESOURCE_SHARDS: JSON.stringify({ items: shards }) },
      s3: { ...base.s3, partitions: { shards, prePartitioned, splitAfterSeconds: 5 } },
    });
    return { ...c, name: `${c.name}-${suffix}` };
  };
  return [sharded('shard', true), sharded('shard-scaleup', false)];
}

const round = (n: number, digits = 0) => Math.round(n * 10 ** digits) / 10 ** digits;

/** S3 writes (PUT and DELETE requests), what the prefix limit counts. */
const s3Writes = (r: FleetCellResult) => r.s3.counts.put + r.s3.counts.delete;

function costOf(r: FleetCellResult) {
  return costPerMillion({
    messages: r.messages,
    lambdaGbSeconds: r.lambdaGbSeconds,
    lambdaRequests: r.invocations,
    sqsRequests: r.sqs.requests,
    s3Puts: r.s3.counts.put,
    s3Gets: r.s3.counts.get,
    s3Heads: r.s3.counts.head,
    s3Lists: r.s3.counts.list,
    s3Deletes: r.s3.counts.delete,
    dynamoWriteUnits: r.dynamo.writeUnits,
    dynamoReadUnits: r.dynamo.readUnits,
    logBytes: r.logBytes,
  });
}

function rowOf(c: FleetCellConfig, r: FleetCellResult, peakRssBytes: number): Row {
  const cost = costOf(r);
  const hot = r.dynamo.hottestPartition;
  return {
    cell: c.name,
    messages: r.messages,
    'offered msg/s': c.offeredPerSecond,
    // A cell stopped before 95% of its messages were final has no such rate.
    'msg/s to 95%':
      r.stopped !== undefined && r.stopped.unfinished > 0.05 * r.messages
        ? '-'
        : round(r.messagesPerSecond95),
    'msg/s': round(r.messagesPerSecond),
    'hot prefix % of limit': round((100 * r.hotPrefix.beforeHalving) / r.hotPrefix.limit),
    // Tenant 0's accepted writes, its best 10 s (over all its shard prefixes when sharded).
    'hot tenant writes/s': round(r.hotPrefix.beforeHalving),
    ...(r.partitions === undefined
      ? {}
      : {
          'hot tenant S3 partitions (splits)': `${r.partitions.hotTenantPartitions} (${r.partitions.splits.length})`,
        }),
    ...(r.hotPrefix.afterHalving === undefined
      ? {}
      : {
          'hot prefix % of halved limit': round((100 * r.hotPrefix.afterHalving) / (r.hotPrefix.limit / 2)),
        }),
    '503 %': round((100 * r.s3.throttled) / Math.max(1, r.s3.requests), 2),
    'DDB requests per S3 write': round(r.dynamo.requests / Math.max(1, s3Writes(r)), 4),
    'DDB hottest WCU/s (of 1,000)': hot?.peakWriteUnitsPerSecond ?? 0,
    'DDB largest item B': r.dynamo.largestItemBytes,
    // The waiters' reads: over the run, and on the partition that spent the most (3,000 RCU/s each).
    'DDB reads/s': round(r.dynamo.readRequests / (r.simulatedMs / 1000)),
    'DDB hottest RCU/s peak/mean': (() => {
      const hot = r.dynamo.hottestReadPartition;
      return hot === undefined
        ? '-'
        : `${hot.peakReadUnitsPerSecond}/${round(hot.readUnits / (r.simulatedMs / 1000))}`;
    })(),
    'DDB throttles': r.dynamo.throttled,
    'booking wait p50/p99 ms': `${round(r.bookingWaitMs.p50)}/${round(r.bookingWaitMs.p99)}`,
    'invocation p50/p99 ms': `${round(r.invocationMs.p50)}/${round(r.invocationMs.p99)}`,
    'e2e p50/p99 s': `${round(r.e2eMs.p50 / 1000, 1)}/${round(r.e2eMs.p99 / 1000, 1)}`,
    redeliveries: r.sqs.redeliveries,
    deferrals: r.sqs.deferrals,
    'deferrals per msg': round(r.sqs.deferrals / r.messages, 3),
    'permits unavailable': r.handler.permitsUnavailable,
    DLQ: r.deadLettered + r.redriven,
    lost: r.lost,
    ...(r.stopped === undefined
      ? {}
      : {
          'stopped at simulated s (unfinished msgs)': `${round(r.stopped.atMs / 1000, 1)} (${r.stopped.unfinished})`,
        }),
    'cold starts': r.coldStarts,
    '$ per M msgs': round(cost.total, 3),
    'simulated s': round(r.simulatedMs / 1000, 1),
    'wall s': round(r.wallMs / 1000, 1),
    'cpu s': round(r.cpuMs / 1000, 1),
    'peak RSS MB': Math.round(peakRssBytes / 2 ** 20),
  };
}

/** Where and when a cell ran: the commit, its start and end, the machine's 1-minute load meanwhile. */
interface CellRun {
  commit: string;
  startedAt: string;
  endedAt: string;
  /** Mean and max of the 1-minute load average, sampled every 30 s while the cell ran. */
  loadAverage: { mean: number; max: number };
}

/** One line of the cells file (fleet-cells.tmp): a finished cell. */
interface KeptCell {
  config: FleetCellConfig;
  result: FleetCellResult;
  peakRssBytes?: number;
  ran?: CellRun;
}

function commitOf(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
    });
    return dirty.trim() === '' ? head : `${head} (with uncommitted changes)`;
  } catch {
    return 'unknown';
  }
}

/** The machine's load while the grid runs: the cells' wall time depends on it, their results do not. */
const loadSamples: Array<{ at: number; load: number }> = [];

/**
 * A cell's process. Its live heap is large (every container's tenant Databases: up to 100,000 pools at
 * concurrency 1,000) and much of what it allocates lives for an invocation, so with 32 MB semi-spaces the
 * scavenges copied the same survivors again and again (11.6 s of pauses in a 50,000-message cell's 40 s
 * of CPU): 128 MB semi-spaces scavenge a third as often. Each tenant pool's two histograms are 7 KB
 * buffers outside V8's heap, one pair per tenant a container opens: glibc's malloc returned that memory
 * to the kernel and faulted it back in, page by page; keeping it (no trim, no mmap below 32 MB, huge
 * pages where the kernel allows them) saves another ~10%. Neither changes what the program computes: the
 * cells' results are byte-identical (docs/fleet-simulation.md).
 */
const CELL_NODE_ARGS = ['--max-old-space-size=8192', '--max-semi-space-size=128'];
process.env.GLIBC_TUNABLES ??=
  'glibc.malloc.hugetlb=1:glibc.malloc.trim_threshold=4000000000:glibc.malloc.mmap_threshold=33554432';

async function runGrid(): Promise<void> {
  const rows: Row[] = [];
  const runs: Record<
    string,
    { config: FleetCellConfig; result: FleetCellResult; cost: ReturnType<typeof costOf>; ran?: CellRun }
  > = {};
  const started = performance.now();
  const cells = grid();
  // --from-cells: no run; the table, JSON and charts from the cells a grid kept so far (fleet-cells.tmp).
  // A cell run again (a subset after an interrupted grid) replaces its earlier line: the last one counts.
  const kept = process.argv.includes('--from-cells')
    ? [
        ...new Map(
          readFileSync(cellsFile, 'utf8')
            .split('\n')
            .filter((line) => line.trim() !== '')
            .map((line) => {
              const k = JSON.parse(line) as KeptCell;
              return [k.config.name, k] as const;
            }),
        ).values(),
      ]
    : undefined;
  // A grid starts a new fleet-cells.tmp; a subset (BENCH_FLEET_CELLS) adds to it, so the cells an
  // interrupted grid did not reach can be run afterwards and `--from-cells` writes the whole table.
  if (kept === undefined && only === undefined) writeFileSync(cellsFile, '');
  // Cells in parallel child processes (BENCH_FLEET_PARALLEL, default 2: this machine's cores): each is
  // deterministic, so running two at once changes nothing but the wall time.
  const parallel = Math.max(1, Number(process.env.BENCH_FLEET_PARALLEL ?? 2));
  let next = 0;
  const results = new Map<string, { result: FleetCellResult; peakRssBytes: number; ran?: CellRun }>();
  const commit = commitOf();
  const sample = () => loadSamples.push({ at: Date.now(), load: loadavg()[0]! });
  const sampler = setInterval(sample, 30_000);
  sample();
  const worker = async () => {
    while (next < cells.length) {
      const c = cells[next++]!;
      console.error(`bench:fleet: ${c.name} (${c.messages.toLocaleString('en-US')} messages) ...`);
      const startedAt = Date.now();
      const report = await runInChild<FleetCellResult>(cellScript, [JSON.stringify(c)], CELL_NODE_ARGS);
      sample();
      const loads = loadSamples.filter((s) => s.at >= startedAt).map((s) => s.load);
      const ran: CellRun = {
        commit,
        startedAt: new Date(startedAt).toISOString(),
        endedAt: new Date().toISOString(),
        loadAverage: {
          mean: round(loads.reduce((sum, l) => sum + l, 0) / loads.length, 2),
          max: round(Math.max(...loads), 2),
        },
      };
      results.set(c.name, { ...report, ran });
      const r = report.result;
      console.error(
        `  ${c.name} done in ${round(r.wallMs / 1000, 1)} s wall, ${round(r.cpuMs / 1000, 1)} s cpu: ${JSON.stringify(rowOf(c, r, report.peakRssBytes))}`,
      );
      // Kept as the grid goes, so an interrupted grid still has its finished cells.
      appendFileSync(
        cellsFile,
        `${JSON.stringify({ config: c, result: r, peakRssBytes: report.peakRssBytes, ran })}\n`,
      );
    }
  };
  if (kept === undefined) {
    try {
      await Promise.all(Array.from({ length: Math.min(parallel, cells.length) }, worker));
    } finally {
      clearInterval(sampler);
    }
  } else {
    clearInterval(sampler);
    for (const k of kept)
      results.set(k.config.name, {
        result: k.result,
        peakRssBytes: k.peakRssBytes ?? 0,
        ...(k.ran === undefined ? {} : { ran: k.ran }),
      });
  }
  for (const c of kept?.map((k) => k.config) ?? cells) {
    const { result, peakRssBytes, ran } = results.get(c.name)!;
    // Cells kept from earlier runs (--from-cells) may have run on other code: each row says which.
    rows.push({ ...rowOf(c, result, peakRssBytes), commit: ran?.commit ?? commit });
    runs[c.name] = { config: c, result, cost: costOf(result), ...(ran === undefined ? {} : { ran }) };
  }
  // From the kept cells (--from-cells), the grid's wall time is first start to last end of its cells.
  const spans = [...results.values()].flatMap((r) =>
    r.ran === undefined ? [] : [[Date.parse(r.ran.startedAt), Date.parse(r.ran.endedAt)] as const],
  );
  const wallS =
    kept !== undefined && spans.length > 0
      ? round((Math.max(...spans.map((s) => s[1])) - Math.min(...spans.map((s) => s[0]))) / 1000)
      : round((performance.now() - started) / 1000);
  writeResults(keepAs ?? (only === undefined ? 'fleet' : 'fleet-subset'), rows, {
    messagesPerCell: MESSAGES,
    gridWallSeconds: wallS,
    time: 'simulated (virtual clock in each child process); wall s / cpu s are what the simulation took here',
    prices: { date: PRICES_DATE, region: PRICES_REGION, ...PRICES },
    definitions: {
      'msg/s to 95%':
        '95% of the messages / the simulated time until 95% were final (the rate without the redelivery tail)',
      'msg/s':
        'messages made final (written or dead-lettered) per simulated second, first send to the last one final (a redelivery waits out the 362 s visibility timeout)',
      'hot prefix % of limit':
        "tenant 0's prefix: its best 10 s of accepted S3 writes/s, as % of the 3,500/s limit",
      '503 %': 'S3 requests answered 503 SlowDown, % of all S3 requests',
      'DDB hottest WCU/s': 'most write units one DynamoDB partition key consumed in one simulated second',
      'booking wait': "the handler's BookingWaitMs samples (a booking to its first slot)",
      e2e: 'SentTimestamp to the end of the invocation that acknowledged the message',
      lost: 'messages never made final, plus acknowledged ones whose object is not in the bucket',
      'DDB requests per S3 write':
        'DynamoDB requests (reads and writes, failed conditional ones included) per S3 PUT or DELETE',
    },
    runs,
  });
  if (only === undefined && keepAs === undefined) writeCharts(runs);
}

function writeCharts(
  runs: Record<string, { config: FleetCellConfig; result: FleetCellResult; cost: { total: number } }>,
): void {
  const lines = new Map<string, Array<{ x: number; run: (typeof runs)[string] }>>();
  for (const run of Object.values(runs)) {
    // Events are not points of the cross product; a stopped cell has no throughput to 95% to plot.
    if (run.config.burst !== undefined || run.config.halveAtS !== undefined) continue;
    if (run.result.stopped !== undefined) continue;
    const key = `${run.config.tenants.toLocaleString('en-US')} tenants, ${run.config.skew}`;
    const points = lines.get(key) ?? [];
    points.push({ x: Math.log10(run.config.concurrency), run });
    lines.set(key, points);
  }
  // The charts are per concurrency: the default grid (two event cells) has no line to draw, and an empty
  // chart would replace the last grid's.
  if (lines.size === 0) {
    console.log(
      'charts not written: no cell of the cross product in this grid (BENCH_FLEET_GRID=cut or full)',
    );
    return;
  }
  const series = (pick: (r: (typeof runs)[string]) => number): Series[] =>
    // In legend order: by tenant count, then skew.
    [...lines]
      .sort(([, a], [, b]) =>
        a[0]!.run.config.tenants !== b[0]!.run.config.tenants
          ? a[0]!.run.config.tenants - b[0]!.run.config.tenants
          : a[0]!.run.config.skew.localeCompare(b[0]!.run.config.skew),
      )
      .map(([name, points]) => ({
        name,
        points: points.sort((a, b) => a.x - b.x).map((p) => [p.x, pick(p.run)] as const),
      }));
  writeFileSync(
    `${resultsDir}fleet-throughput.svg`,
    renderLineChart({
      title: `bench:fleet — ${MESSAGES.toLocaleString('en-US')} messages per cell, simulated (x: log10 of MaximumConcurrency: 1 = 10, 3 = 1,000)`,
      xLabel: 'log10(concurrency)',
      panels: [
        {
          // Log scale: the uniform cells run at ~190,000 msg/s, the hot-tenant cells at 2,000-12,000.
          title: 'messages/s until 95% were final (log scale)',
          yLabel: 'msg/s',
          logScale: true,
          series: series((r) => r.result.messagesPerSecond95),
        },
        {
          title: '503 SlowDown, % of S3 requests',
          yLabel: '%',
          series: series((r) => (100 * r.result.s3.throttled) / Math.max(1, r.result.s3.requests)),
        },
      ],
    }),
  );
  writeFileSync(
    `${resultsDir}fleet-cost.svg`,
    renderLineChart({
      title: `bench:fleet — cost per million messages (USD, ${PRICES_REGION} list prices of ${PRICES_DATE})`,
      xLabel: 'log10(concurrency)',
      panels: [{ title: 'USD per million messages', yLabel: 'USD', series: series((r) => r.cost.total) }],
    }),
  );
  console.log('written: bench/results/fleet-throughput.svg, bench/results/fleet-cost.svg');
}

/** A calibration's local half as stored in its results file: the run, or why there is none. */
interface StoredCalibration {
  local?: LoadRunResult | string;
}

/**
 * bench:load's configuration (50 tenants, two hot ones at 25% each, 50 writes/s per prefix, batch 100, 4
 * invocations, POOL_CONCURRENCY 64, 8 s timeout, backlog 1,000) run twice over: simulated here, and on the
 * local stack by bench:load's own engine (fauxqs, dynalite, the chaos proxy), the handler as shipped in both.
 */
async function calibrate(): Promise<void> {
  const messages = Number(process.env.BENCH_FLEET_CALIBRATE_MESSAGES ?? 4_000);
  const resultsName = keepAs ?? 'fleet-calibration';
  const load: LoadRunConfig = {
    engine: 'rate',
    messages,
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
  const simulated: FleetCellConfig = {
    ...base,
    name: 'calibration',
    messages,
    concurrency: load.invocations,
    tenants: load.tenants,
    skew: 'two-hot',
    hotShare: load.hotShare,
    // bench:load's producer sends upserts only (each a GET then a conditional PUT for a new record).
    allUpserts: true,
    offeredPerSecond: 1_000_000,
    backlog: load.backlog,
    batchSize: load.batchSize,
    batchingWindowMs: 200,
    functionTimeoutMs: load.functionTimeoutMs,
    // bench:load's runner: the function timeout + 2 s.
    visibilityTimeoutMs: load.functionTimeoutMs + 2_000,
    duplicateRate: 0,
    poisonRate: 0,
    coldStart: { medianMs: 50, p99Ms: 100 },
    s3: { writesPerSecond: load.writesPerSecond, latency: load.latency, internalErrorRate: 0 },
    env: {
      POOL_CONCURRENCY: String(load.poolConcurrency),
      DEADLINE_MARGIN_MS: '2000',
      WRITE_TIMEOUT_MS: '2000',
    },
  };
  // Twice simulated: as the grid runs (S3 calls leave at the instant the pool starts them), and with each
  // container's S3 client spending 1 ms of CPU per call, one call at a time (what the SDK costs here,
  // design.md), which spaces a container's requests out as the local stack's do.
  const variants = [
    { run: 'simulated, no client CPU', clientCpuMsPerCall: 0 },
    { run: 'simulated, 1 ms client CPU per S3 call (the grid)', clientCpuMsPerCall: 1 },
    // The local stack runs the 4 containers, the SDK clients, the proxy and the emulators in one process:
    // about 2.5 ms of that process's CPU per S3 request, one request at a time.
    {
      run: 'simulated, one CPU for all containers, 2.5 ms per S3 call',
      clientCpuMsPerCall: 2.5,
      shared: true,
    },
  ];
  const sims: Array<{ run: string; config: FleetCellConfig; result: FleetCellResult }> = [];
  for (const v of variants) {
    console.error(`bench:fleet --calibrate: ${messages} messages, ${v.run} ...`);
    const config: FleetCellConfig = {
      ...simulated,
      s3: { ...simulated.s3, clientCpuMsPerCall: v.clientCpuMsPerCall, clientCpuShared: v.shared === true },
    };
    sims.push({
      run: v.run,
      config,
      result: (await runInChild<FleetCellResult>(cellScript, [JSON.stringify(config)])).result,
    });
  }
  const simRow = ({ run, result: sim }: (typeof sims)[number]): Row => ({
    run,
    messages,
    'msg/s': round(sim.messagesPerSecond, 1),
    '503 % of S3 requests': round((100 * sim.s3.throttled) / Math.max(1, sim.s3.requests), 1),
    'S3 requests': sim.s3.requests,
    'e2e p50/p99 s': `${round(sim.e2eMs.p50 / 1000, 1)}/${round(sim.e2eMs.p99 / 1000, 1)}`,
    redeliveries: sim.sqs.redeliveries,
    lost: sim.lost,
  });
  const details = {
    load,
    simulated: sims.map((s) => ({
      run: s.run,
      config: s.config,
      result: { ...s.result, timeline: undefined },
    })),
  };
  // BENCH_FLEET_CALIBRATE_LOCAL=0 runs the simulated half only (the local stack needs minutes of idle CPU);
  // =reuse takes the local half from the last results file of this name (same configuration).
  const localMode = process.env.BENCH_FLEET_CALIBRATE_LOCAL;
  if (localMode === '0') {
    writeResults(resultsName, sims.map(simRow), { ...details, local: 'not run' });
    return;
  }
  let real: LoadRunResult | undefined;
  let failure: string | undefined;
  if (localMode === 'reuse') {
    const stored = JSON.parse(readFileSync(`${resultsDir}${resultsName}.json`, 'utf8')) as StoredCalibration;
    if (typeof stored.local !== 'object' || stored.local.engine !== load.engine)
      throw new Error(
        `no local-stack half of the handler (bench:load engine ${load.engine}) in bench/results/${resultsName}.json to reuse`,
      );
    real = stored.local;
  } else {
    console.error('bench:fleet --calibrate: the local stack (bench:load engine) ...');
    try {
      real = (await runInChild<LoadRunResult>(loadEngine, [JSON.stringify(load)])).result;
    } catch (error) {
      // Keep the simulated half, and say why the other is missing.
      failure = `failed: ${String(error).split('\n')[0]}`;
    }
  }
  const rows: Row[] = sims.map(simRow);
  if (real === undefined) {
    rows.push({ run: 'local stack (bench:load engine)', messages, 'msg/s': 'failed' });
  } else {
    const realRate = real.messages / (real.durationMs / 1000);
    const real503 = (100 * real.throttled) / Math.max(1, real.s3Requests);
    rows.push(
      {
        run: 'local stack (bench:load engine)',
        messages,
        'msg/s': round(realRate, 1),
        '503 % of S3 requests': round(real503, 1),
        'S3 requests': real.s3Requests,
        'e2e p50/p99 s': `${round(real.e2e.p50 / 1000, 1)}/${round(real.e2e.p99 / 1000, 1)}`,
        redeliveries: real.redelivered,
        lost: real.lost,
      },
      ...sims.map(({ run, result: sim }) => ({
        run: `${run} / local`,
        'msg/s': round(sim.messagesPerSecond / realRate, 2),
        // No ratio to a local rate of 0 (a handful of refusals against none would print millions).
        '503 % of S3 requests':
          real503 > 0
            ? round((100 * sim.s3.throttled) / Math.max(1, sim.s3.requests) / real503, 2)
            : `${sim.s3.throttled} vs ${real.throttled} refusals`,
        'S3 requests': round(sim.s3.requests / Math.max(1, real.s3Requests), 2),
      })),
    );
  }
  writeResults(resultsName, rows, {
    ...details,
    local: real === undefined ? failure : { ...real, samples: undefined },
  });
}

// --configs: the grid's cell configurations, one JSON line each, nothing run (to run or profile one cell
// directly: `node --cpu-prof --import tsx bench/fleet/engine.ts "$(line)"`).
if (process.argv.includes('--configs')) for (const c of grid()) console.log(JSON.stringify(c));
else if (process.argv.includes('--calibrate')) await calibrate();
else await runGrid();
