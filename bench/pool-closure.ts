// npm run bench:pool-closure — the pool's lead in the closure-plus-payload-per-task pattern, steady: ExecutorPool
// (priorities, retries, timeouts on) against fastq (push(payload)) and p-queue with priority, 100k tasks,
// concurrency 100, each engine in its own process (bench/pool/engine.ts, mode `closure`), interleaved per round.
// `pool-one-priority` is the same pool with every task at one priority: the gap between it and `pool` is what
// starting queued tasks in priority order (not in the order they were allocated) costs. `pool-sorted-priority`
// (a diagnostic) deals the same ten priorities in descending blocks, so tasks start in allocation order through
// ten queue levels: near `pool-one-priority`, the gap is the order the tasks are touched in, not the levels.
// Each engine also reports its CPU per task while submitting and while draining (the two cost different things).
// The ratios are taken per round (same load on both) and reported as median (min-max) over the rounds.
// BENCH_POOL_ROUNDS (default 5) sets the rounds; BENCH_POOL_WARM_RUNS (default 0) unmeasured runs of the same
// pattern in each engine's process before the measured one (0: the first 100k tasks, JIT warm-up included).
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { EngineResult } from './pool/engine.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';
import { formatSpread, spreadOf } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_POOL_ROUNDS ?? 5);
const TASKS = 100_000;
const script = fileURLToPath(new URL('./pool/engine.ts', import.meta.url));
const engines = ['pool', 'fastq', 'p-queue-priority', 'pool-one-priority', 'pool-sorted-priority'] as const;
type Engine = (typeof engines)[number];

const loadAtStart = loadavg();
const rounds: Array<Record<Engine, EngineResult>> = [];
for (let round = 0; round < ROUNDS; round++) {
  const results = {} as Record<Engine, EngineResult>;
  // Rotate the order each round so no engine always runs first (or right after the slowest).
  for (let i = 0; i < engines.length; i++) {
    const engine = engines[(i + round) % engines.length]!;
    const { result } = await runInChild<EngineResult>(
      script,
      [engine, String(TASKS), 'closure'],
      ['--expose-gc', '--max-old-space-size=4096'],
    );
    results[engine] = result;
  }
  rounds.push(results);
  process.stderr.write(
    `  round ${round + 1}/${ROUNDS}: pool/fastq ${(results.pool.opsPerSec / results.fastq.opsPerSec).toFixed(2)}x, pool/p-queue(priority) ${(results.pool.opsPerSec / results['p-queue-priority'].opsPerSec).toFixed(2)}x, pool with one priority/fastq ${(results['pool-one-priority'].opsPerSec / results.fastq.opsPerSec).toFixed(2)}x, sorted priorities/fastq ${(results['pool-sorted-priority'].opsPerSec / results.fastq.opsPerSec).toFixed(2)}x (load ${loadavg()[0]})\n`,
  );
}

const ratio = (other: Engine) => spreadOf(rounds.map((r) => r.pool.opsPerSec / r[other].opsPerSec));
const cpuRatio = spreadOf(rounds.map((r) => r.pool.cpuMicrosPerTask / r.fastq.cpuMicrosPerTask));
const rows: Row[] = engines.map((engine) => ({
  engine,
  'ops/s': formatSpread(spreadOf(rounds.map((r) => r[engine].opsPerSec)), 0),
  'CPU µs/task': formatSpread(spreadOf(rounds.map((r) => r[engine].cpuMicrosPerTask)), 2),
  'submit / drain CPU µs/task': `${spreadOf(rounds.map((r) => r[engine].enqueueCpuMicrosPerTask ?? 0)).median.toFixed(2)} / ${spreadOf(rounds.map((r) => r[engine].drainCpuMicrosPerTask ?? 0)).median.toFixed(2)}`,
  'pool / this (ops/s, per round)': engine === 'pool' ? undefined : formatSpread(ratio(engine), 2),
  'this / fastq (ops/s, per round)':
    engine === 'fastq'
      ? undefined
      : formatSpread(spreadOf(rounds.map((r) => r[engine].opsPerSec / r.fastq.opsPerSec)), 2),
}));
writeResults('pool-closure', rows, {
  description: `${TASKS} tasks, concurrency 100, a fresh payload per task (a fresh closure where the API takes functions), one setImmediate hop of work; ${ROUNDS} rounds, engines interleaved; ${process.env.BENCH_POOL_WARM_RUNS ?? 0} unmeasured runs before the measured one in each process; figures: median (min-max) over rounds`,
  loadAverageAtStart: loadAtStart,
  loadAverageAtEnd: loadavg(),
  targets: {
    'pool / fastq ops/s (>= 1.2)': ratio('fastq'),
    'pool / p-queue with priority ops/s (>= 3)': ratio('p-queue-priority'),
    'pool / fastq CPU per task': cpuRatio,
    'pool with one priority / fastq ops/s': spreadOf(
      rounds.map((r) => r['pool-one-priority'].opsPerSec / r.fastq.opsPerSec),
    ),
    'pool with priorities in start order / fastq ops/s': spreadOf(
      rounds.map((r) => r['pool-sorted-priority'].opsPerSec / r.fastq.opsPerSec),
    ),
  },
  rounds,
});
