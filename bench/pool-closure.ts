// npm run bench:pool-closure — the pool's lead in the closure-plus-payload-per-task pattern: ExecutorPool
// (priorities, retries, timeouts on) against fastq (push(payload)) and p-queue with priority, 100k tasks,
// concurrency 100, one setImmediate hop of work per task, measured two ways:
// - same process, interleaved (how the issue measured): one process, every engine once per round, the order
//   rotated each round. Round 1 runs each engine's code cold; later rounds run it as a long-lived process (a
//   warm Lambda container) does, and a run may pay for collecting the garbage of the run before it.
// - a fresh process per run: each engine's first 100k tasks in a process of its own (JIT warm-up and heap
//   growth included), the engines interleaved per round: what a cold start sees.
// `pool-one-priority` is the same pool with every task at one priority: the gap between it and `pool` is what
// starting queued tasks in priority order (not in the order they were allocated) costs. `pool-sorted-priority`
// (a diagnostic) deals the same ten priorities in descending blocks, so tasks start in allocation order through
// ten queue levels. `floor` (bench/pool/floor-pool.ts) is the least a priority-honouring pool does per task, with
// the same scrambled priorities and no features: its ratio to fastq bounds what the pool can reach here;
// `floor-sorted-priority` deals it the priorities as `pool-sorted-priority` does. The four make a grid: the
// pool over the floor in each order is what the features cost, each engine's scrambled over its sorted
// order is what priority order costs it. Each
// run also reports its CPU per task while submitting and while draining. A last step measures the caller's side
// of priority order alone: resolving 100k promises awaited by one Promise.all in the order they were made
// against the pool's start order, with no queue, cold (a fresh process's first run) and warm (its fourth).
// Ratios are taken per round (same load on both) and reported as median (min-max) over the rounds.
// BENCH_POOL_SAME_PROCESS_ROUNDS (default 11) sets the rounds of the same-process measure, BENCH_POOL_ROUNDS
// (default 5) those of the others; BENCH_POOL_WARM_RUNS (default 0) adds that many unmeasured runs before the
// measured one in each fresh process.
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { EngineResult } from './pool/engine.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';
import { formatSpread, type Spread, spreadOf } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_POOL_ROUNDS ?? 5);
/**
 * Rounds of the same-process measure. Its runs are short (a fifth of a second warm) and its per-round ratios swing
 * about 0.6x-1.8x with which run pays for collecting the garbage of the one before, so it takes more rounds than
 * the fresh-process measure for a median that holds from one run of the bench to the next.
 */
const SAME_PROCESS_ROUNDS = Number(process.env.BENCH_POOL_SAME_PROCESS_ROUNDS ?? 11);
const TASKS = 100_000;
const NODE_ARGS = ['--expose-gc', '--max-old-space-size=4096'];
const script = fileURLToPath(new URL('./pool/engine.ts', import.meta.url));
const engines = [
  'pool',
  'fastq',
  'p-queue-priority',
  'pool-one-priority',
  'pool-sorted-priority',
  'floor',
  'floor-sorted-priority',
] as const;
type Engine = (typeof engines)[number];
type Round = Record<Engine, EngineResult>;

function byEngine(runs: readonly EngineResult[]): Round {
  return Object.fromEntries(runs.map((run) => [run.engine, run])) as Round;
}

function progress(label: string, round: number, rounds: number, r: Round): void {
  const vs = (a: Engine, b: Engine) => (r[a].opsPerSec / r[b].opsPerSec).toFixed(2);
  process.stderr.write(
    `  ${label} round ${round + 1}/${rounds}: pool/fastq ${vs('pool', 'fastq')}x, pool/p-queue(priority) ${vs('pool', 'p-queue-priority')}x, one priority/fastq ${vs('pool-one-priority', 'fastq')}x, floor/fastq ${vs('floor', 'fastq')}x (load ${loadavg()[0]})\n`,
  );
}

/** Same process, interleaved: one child runs every round. */
async function sameProcess(): Promise<Round[]> {
  const { result } = await runInChild<EngineResult[][]>(
    script,
    [engines.join(','), String(TASKS), 'interleaved', String(SAME_PROCESS_ROUNDS)],
    NODE_ARGS,
  );
  const rounds = result.map(byEngine);
  rounds.forEach((round, i) => progress('same process', i, SAME_PROCESS_ROUNDS, round));
  return rounds;
}

/** A fresh process per run: one child per engine per round, the order rotated each round. */
async function freshProcesses(): Promise<Round[]> {
  const rounds: Round[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const runs: EngineResult[] = [];
    for (let i = 0; i < engines.length; i++) {
      const engine = engines[(i + round) % engines.length]!;
      const { result } = await runInChild<EngineResult>(
        script,
        [engine, String(TASKS), 'closure'],
        NODE_ARGS,
      );
      runs.push(result);
    }
    rounds.push(byEngine(runs));
    progress('fresh process', round, ROUNDS, rounds[round]!);
  }
  return rounds;
}

function ratio(rounds: readonly Round[], engine: Engine, other: Engine): Spread {
  return spreadOf(rounds.map((r) => r[engine].opsPerSec / r[other].opsPerSec));
}

function rowsOf(rounds: readonly Round[], measure: string): Row[] {
  return engines.map((engine) => ({
    measure,
    engine,
    'ops/s': formatSpread(spreadOf(rounds.map((r) => r[engine].opsPerSec)), 0),
    'CPU µs/task': formatSpread(spreadOf(rounds.map((r) => r[engine].cpuMicrosPerTask)), 2),
    'submit / drain CPU µs/task': `${spreadOf(rounds.map((r) => r[engine].enqueueCpuMicrosPerTask ?? 0)).median.toFixed(2)} / ${spreadOf(rounds.map((r) => r[engine].drainCpuMicrosPerTask ?? 0)).median.toFixed(2)}`,
    'pool / this (ops/s, per round)':
      engine === 'pool' ? undefined : formatSpread(ratio(rounds, 'pool', engine), 2),
    'this / fastq (ops/s, per round)':
      engine === 'fastq' ? undefined : formatSpread(ratio(rounds, engine, 'fastq'), 2),
  }));
}

function targetsOf(rounds: readonly Round[]): Record<string, Spread> {
  return {
    'pool / fastq ops/s (>= 1.2)': ratio(rounds, 'pool', 'fastq'),
    'pool / p-queue with priority ops/s (>= 3)': ratio(rounds, 'pool', 'p-queue-priority'),
    'pool / fastq CPU per task': spreadOf(
      rounds.map((r) => r.pool.cpuMicrosPerTask / r.fastq.cpuMicrosPerTask),
    ),
    'pool with one priority / fastq ops/s': ratio(rounds, 'pool-one-priority', 'fastq'),
    'pool with priorities in start order / fastq ops/s': ratio(rounds, 'pool-sorted-priority', 'fastq'),
    'floor (a featureless priority pool) / fastq ops/s': ratio(rounds, 'floor', 'fastq'),
    'floor with priorities in start order / fastq ops/s': ratio(rounds, 'floor-sorted-priority', 'fastq'),
    "pool / floor ops/s, scrambled priorities (the features' cost)": ratio(rounds, 'pool', 'floor'),
    "pool / floor ops/s, priorities in start order (the features' cost)": ratio(
      rounds,
      'pool-sorted-priority',
      'floor-sorted-priority',
    ),
    'floor scrambled / in start order ops/s (what priority order costs a featureless pool)': ratio(
      rounds,
      'floor',
      'floor-sorted-priority',
    ),
    'pool scrambled / in start order ops/s (what priority order costs the pool)': ratio(
      rounds,
      'pool',
      'pool-sorted-priority',
    ),
  };
}

/**
 * The caller's side of priority order alone (no queue): 100k promises awaited by one Promise.all, resolved in
 * the order they were made and in the pool's start order, alternated, each in a fresh process: its first run
 * (`cold`) or its fourth (`warm`: three unmeasured runs first).
 */
type Order = 'allocation' | 'priority';
async function resolveOrders(warmRuns: number): Promise<Record<Order, EngineResult[]>> {
  const runs: Record<Order, EngineResult[]> = { allocation: [], priority: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const orders: Order[] = round % 2 === 0 ? ['allocation', 'priority'] : ['priority', 'allocation'];
    for (const order of orders) {
      const args = [order, String(TASKS), 'resolve-order', String(warmRuns)];
      runs[order].push((await runInChild<EngineResult>(script, args, NODE_ARGS)).result);
    }
  }
  return runs;
}

const loadAtStart = loadavg();
const interleaved = await sameProcess();
const fresh = await freshProcesses();
const resolved = { cold: await resolveOrders(0), warm: await resolveOrders(3) };
const resolveMs = (runs: readonly EngineResult[]) => spreadOf(runs.map((run) => run.ms));
const callerRows: Row[] = (['cold', 'warm'] as const).flatMap((state) =>
  (['allocation', 'priority'] as const).map((order) => ({
    measure: `caller's side, ${state}`,
    engine: `100k promises under Promise.all, resolved in ${order} order`,
    'ops/s': formatSpread(spreadOf(resolved[state][order].map((run) => run.opsPerSec)), 0),
    'CPU µs/task': formatSpread(spreadOf(resolved[state][order].map((run) => run.cpuMicrosPerTask)), 2),
    'submit / drain CPU µs/task': `ms: ${formatSpread(resolveMs(resolved[state][order]), 1)}`,
  })),
);
for (const [measure, rounds] of [
  ['same process', interleaved],
  ['fresh process', fresh],
] as const) {
  process.stderr.write(`\n${measure}, median (min-max) of the per-round ratios:\n`);
  for (const [name, spread] of Object.entries(targetsOf(rounds))) {
    process.stderr.write(`  ${name}: ${formatSpread(spread, 2)}\n`);
  }
}
writeResults(
  'pool-closure',
  [...rowsOf(interleaved, 'same process'), ...rowsOf(fresh, 'fresh process'), ...callerRows],
  {
    description: `${TASKS} tasks, concurrency 100, a fresh payload per task (a fresh closure where the API takes functions), one setImmediate hop of work; ${SAME_PROCESS_ROUNDS} rounds in one process and ${ROUNDS} of fresh processes, engines interleaved; figures: median (min-max) over rounds`,
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: loadavg(),
    targets: {
      'same process, interleaved': targetsOf(interleaved),
      'fresh process per run': targetsOf(fresh),
    },
    callersSide: {
      'cold: resolving in allocation order, ms': resolveMs(resolved.cold.allocation),
      'cold: resolving in priority order, ms': resolveMs(resolved.cold.priority),
      'warm: resolving in allocation order, ms': resolveMs(resolved.warm.allocation),
      'warm: resolving in priority order, ms': resolveMs(resolved.warm.priority),
    },
    rounds: { sameProcess: interleaved, freshProcess: fresh, resolveOrder: resolved },
  },
);
