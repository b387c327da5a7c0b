// One engine, one measurement, in its own process (spawned by bench/pool.ts and bench/pool-closure.ts through
// runInChild). argv: <engine> <tasks> <mode: throughput | closure | heap | process | signal | resolve-order>, or
// <engine,engine,...> <tasks> interleaved <rounds> for several engines taking turns in this one process.
import fastq from 'fastq';
import pLimit from 'p-limit';
import PQueue from 'p-queue';
import { ExecutorPool, processWithPool } from '../../lib/pool/index.js';
import { reportToParent } from '../support/child.js';
import { FloorPool } from './floor-pool.js';

export interface EngineResult {
  engine: string;
  tasks: number;
  mode: string;
  ms: number;
  opsPerSec: number;
  /** Process CPU time (user + system, all threads: GC included) per task, in microseconds. */
  cpuMicrosPerTask: number;
  heapBytesPerQueuedTask?: number;
  heapUsedBytes: number;
  /** Closure mode: process CPU per task while the tasks were submitted (µs), and after, while they ran. */
  enqueueCpuMicrosPerTask?: number;
  drainCpuMicrosPerTask?: number;
}

const CONCURRENCY = 100;
const [engine = 'pool', tasksArg = '100000', mode = 'throughput'] = process.argv.slice(2);
const tasks = Number(tasksArg);

/** The unit of work: one event-loop hop, as an I/O completion would be. */
const work = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** What a caller's task carries: a fresh object per task (a record to write). */
interface Payload {
  readonly index: number;
}
/** The same hop, for a payload: the operation users wrap per task (`() => op(payload)`). */
const op = (payload: Payload): Promise<number> =>
  new Promise((resolve) => setImmediate(resolve, payload.index));
const never = (): Promise<void> => new Promise(() => {});

/** Deterministic priorities 0..9 in scrambled order (so a sorted insert lands mid-queue). */
let seed = 12345;
function nextPriority(): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % 10;
}

/** The same ten priorities dealt in descending blocks by task index: tasks start in the order they were made. */
function startOrderPriority(index: number): number {
  return 9 - Math.floor((index * 10) / tasks);
}

interface Engine {
  /** Submits one task and returns its promise. */
  submit(fn: () => Promise<void>): Promise<void>;
  /**
   * Submits one payload the way a user of this library writes it: a fresh closure per task
   * (`enqueue(() => op(payload))`) where the API takes functions, the payload itself where it takes data
   * (fastq's `push(payload)` to a worker bound at construction).
   */
  submitPayload(payload: Payload): Promise<number>;
}

/** The pool with priorities, retries and timeouts all on: the configuration the targets are stated for. */
function featuredPool(): ExecutorPool {
  return new ExecutorPool({ concurrency: CONCURRENCY, retries: 3, retryDelay: 100, timeout: 30_000 });
}

function makeEngine(name: string): Engine {
  switch (name) {
    case 'pool': {
      const pool = featuredPool();
      return {
        submit: (fn) => pool.enqueue(fn, { priority: nextPriority() }),
        submitPayload: (payload) => pool.enqueue(() => op(payload), { priority: nextPriority() }),
      };
    }
    case 'pool-one-priority': {
      // The same pool and options, every task at one priority: tasks start in the order they were queued, as
      // fastq's do. Against 'pool' it isolates what starting 100k queued tasks out of allocation order costs.
      const pool = featuredPool();
      const options = { priority: 5 };
      return {
        submit: (fn) => pool.enqueue(fn, options),
        submitPayload: (payload) => pool.enqueue(() => op(payload), { priority: 5 }),
      };
    }
    case 'pool-sorted-priority': {
      // Diagnostic: the same ten priorities as 'pool', dealt in descending blocks (the first tenth of the tasks
      // at 9, the next at 8, ...), so tasks start in the order they were allocated, as with one priority, while
      // the queue keeps ten levels. Near 'pool-one-priority': what 'pool' loses is the order, not the levels.
      const pool = featuredPool();
      return {
        submit: (fn) => pool.enqueue(fn, { priority: nextPriority() }),
        submitPayload: (payload) =>
          pool.enqueue(() => op(payload), { priority: startOrderPriority(payload.index) }),
      };
    }
    case 'floor': {
      // The least a priority-honouring pool does per task (floor-pool.ts), with the same scrambled priorities:
      // its ratio to fastq bounds what the pool can reach in this pattern with its features on.
      const pool = new FloorPool(CONCURRENCY);
      return {
        submit: (fn) => pool.enqueue(fn, nextPriority()),
        submitPayload: (payload) => pool.enqueue(() => op(payload), nextPriority()),
      };
    }
    case 'floor-sorted-priority': {
      // The floor with the priorities dealt as 'pool-sorted-priority' deals them: against 'floor', what
      // priority order costs a pool with no features; against 'pool-sorted-priority', what the features cost.
      const pool = new FloorPool(CONCURRENCY);
      return {
        submit: (fn) => pool.enqueue(fn, nextPriority()),
        submitPayload: (payload) => pool.enqueue(() => op(payload), startOrderPriority(payload.index)),
      };
    }
    case 'fastq': {
      const queue = fastq.promise((fn: () => Promise<void>) => fn(), CONCURRENCY);
      const payloads = fastq.promise(op, CONCURRENCY);
      return { submit: (fn) => queue.push(fn), submitPayload: (payload) => payloads.push(payload) };
    }
    case 'p-queue': {
      const queue = new PQueue({ concurrency: CONCURRENCY });
      return { submit: (fn) => queue.add(fn), submitPayload: (payload) => queue.add(() => op(payload)) };
    }
    case 'p-queue-priority': {
      const queue = new PQueue({ concurrency: CONCURRENCY });
      return {
        submit: (fn) => queue.add(fn, { priority: nextPriority() }),
        submitPayload: (payload) => queue.add(() => op(payload), { priority: nextPriority() }),
      };
    }
    case 'p-limit': {
      const limit = pLimit(CONCURRENCY);
      return { submit: (fn) => limit(fn), submitPayload: (payload) => limit(() => op(payload)) };
    }
    case 'promise-all':
      return { submit: (fn) => fn(), submitPayload: (payload) => op(payload) };
    default:
      throw new Error(`unknown engine ${name}`);
  }
}

const retained: unknown[] = [];
let cpuAtStart = process.cpuUsage();

/** Marks the start of the measured section (wall time is taken by each mode; CPU time here). */
function startCpu(): void {
  cpuAtStart = process.cpuUsage();
}

function measured(name: string, ms: number, extra: Partial<EngineResult> = {}): EngineResult {
  const cpu = process.cpuUsage(cpuAtStart);
  return {
    cpuMicrosPerTask: (cpu.user + cpu.system) / tasks,
    engine: name,
    tasks,
    mode,
    ms,
    opsPerSec: (tasks * 1000) / ms,
    heapUsedBytes: process.memoryUsage().heapUsed,
    ...extra,
  };
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function throughput(): Promise<EngineResult> {
  const e = makeEngine(engine);
  startCpu();
  const start = performance.now();
  const all: Promise<void>[] = new Array(tasks);
  for (let i = 0; i < tasks; i++) all[i] = e.submit(work);
  await Promise.all(all);
  return measured(engine, performance.now() - start);
}

/** One run of the per-task-closure pattern with a fresh `name` engine: a fresh payload (and, for function-taking APIs, a fresh closure) per task. */
async function closureRun(name: string): Promise<EngineResult> {
  const e = makeEngine(name);
  const all: Promise<number>[] = new Array(tasks);
  startCpu();
  const start = performance.now();
  for (let i = 0; i < tasks; i++) all[i] = e.submitPayload({ index: i });
  const submitted = process.cpuUsage(cpuAtStart);
  await Promise.all(all);
  const result = measured(name, performance.now() - start);
  result.enqueueCpuMicrosPerTask = (submitted.user + submitted.system) / tasks;
  result.drainCpuMicrosPerTask = result.cpuMicrosPerTask - result.enqueueCpuMicrosPerTask;
  return result;
}

/** The closure pattern in a fresh process: the engine's first 100k tasks (JIT and heap warm-up included). */
async function closures(): Promise<EngineResult> {
  // BENCH_POOL_WARM_RUNS (default 0): that many unmeasured runs first, each with a fresh engine, so the
  // measured run sees optimised code (steady state) rather than the JIT's warm-up.
  const warmRuns = Number(process.env.BENCH_POOL_WARM_RUNS ?? 0);
  for (let run = 0; run < warmRuns; run++) await closureRun(engine);
  return closureRun(engine);
}

/**
 * The closure pattern with every engine in this one process, taking turns: `rounds` rounds (argv after the
 * mode), each running every engine of the comma-separated list once, the order rotated by one each round.
 * Each run is a fresh engine. No GC is forced between runs: as in any long-lived process, a run may collect
 * the garbage of the run before it, and the rotation spreads that over the engines. The first round runs
 * every engine's code cold; later rounds run it as a long-lived process does.
 */
async function interleaved(): Promise<EngineResult[][]> {
  const names = engine.split(',');
  const rounds = Number(process.argv[5] ?? 5);
  const results: EngineResult[][] = [];
  for (let round = 0; round < rounds; round++) {
    const runs: EngineResult[] = [];
    for (let i = 0; i < names.length; i++) {
      runs.push(await closureRun(names[(i + round) % names.length]!));
    }
    results.push(runs);
  }
  return results;
}

/**
 * `tasks` tasks sharing one caller AbortSignal (an invocation's deadline), never aborted. Engines:
 * 'signal-none' passes no signal (the floor); 'signal-shared' passes the shared signal (the pool listens to
 * it once); 'signal-per-task' keeps the old behaviour reachable here only: every task adds its own listener
 * to the shared signal and removes it when it settles, which Node's EventTarget makes O(n) per add.
 */
async function sharedSignal(): Promise<EngineResult> {
  const pool = featuredPool();
  const deadline = new AbortController().signal;
  const submit = (): Promise<void> => {
    if (engine === 'signal-none') return pool.enqueue(work, { priority: nextPriority() });
    if (engine === 'signal-shared') return pool.enqueue(work, { priority: nextPriority(), signal: deadline });
    const own = new AbortController();
    const onAbort = () => own.abort(deadline.reason);
    deadline.addEventListener('abort', onAbort, { once: true });
    const task = pool.enqueue(work, { priority: nextPriority(), signal: own.signal });
    const detach = () => deadline.removeEventListener('abort', onAbort);
    task.then(detach, detach);
    return task;
  };
  startCpu();
  const start = performance.now();
  const all: Promise<void>[] = new Array(tasks);
  for (let i = 0; i < tasks; i++) all[i] = submit();
  await Promise.all(all);
  return measured(engine, performance.now() - start);
}

/** Streams `tasks` items through processWithPool(): nothing per item is kept. */
async function streaming(): Promise<EngineResult> {
  const pool = featuredPool();
  function* items() {
    for (let i = 0; i < tasks; i++) yield i;
  }
  let sum = 0;
  startCpu();
  const start = performance.now();
  const summary = await processWithPool(pool, items(), work, {
    onResult: () => {
      sum += 1;
    },
  });
  const ms = performance.now() - start;
  if (summary.processed !== tasks || sum !== tasks)
    throw new Error(`process() lost items: ${JSON.stringify(summary)}`);
  return measured('pool.process', ms);
}

/**
 * Heap retained per queued task: fill every slot with work that never ends, queue `tasks` more with one
 * shared function (so no caller closure is counted), keep their promises like a caller would, and divide.
 */
async function heapPerTask(): Promise<EngineResult> {
  const e = makeEngine(engine);
  if (engine === 'promise-all') throw new Error('promise-all has no queue');
  for (let i = 0; i < CONCURRENCY; i++) e.submit(never).catch(() => {});
  await new Promise((resolve) => setImmediate(resolve));
  const held: Promise<void>[] = new Array(tasks);
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  startCpu();
  const start = performance.now();
  for (let i = 0; i < tasks; i++) held[i] = e.submit(work);
  const ms = performance.now() - start;
  gc();
  gc();
  const after = process.memoryUsage().heapUsed;
  const result = measured(engine, ms, {
    heapBytesPerQueuedTask: (after - before) / tasks,
    heapUsedBytes: after,
  });
  // Both must stay reachable until after the measurement, or an engine whose queue nothing else references
  // (fastq's, once its workers are parked on never-settling promises) is collected with its tasks.
  retained.push(e, held);
  return result;
}

/**
 * The caller's side of starting tasks in priority order, with no queue at all: `tasks` promises awaited by one
 * `Promise.all`, resolved `CONCURRENCY` per event-loop turn, in the order they were made (engine
 * `allocation`: what a FIFO queue does) or in the order this bench's scrambled priorities start them (engine
 * `priority`: highest first, FIFO among equals). argv after the mode: unmeasured runs first (default 0).
 */
async function resolveOrder(): Promise<EngineResult> {
  const warmRuns = Number(process.argv[5] ?? 0);
  for (let run = 0; run < warmRuns; run++) await resolveOrderRun();
  return resolveOrderRun();
}

async function resolveOrderRun(): Promise<EngineResult> {
  const resolvers: Array<(value: number) => void> = new Array(tasks);
  const all: Promise<number>[] = new Array(tasks);
  const levels = Array.from({ length: 10 }, (): number[] => []);
  for (let i = 0; i < tasks; i++) {
    all[i] = new Promise<number>((resolve) => {
      resolvers[i] = resolve;
    });
    levels[nextPriority()]!.push(i);
  }
  const waited = Promise.all(all);
  const order = engine === 'priority' ? levels.reverse().flat() : Array.from({ length: tasks }, (_, i) => i);
  startCpu();
  const start = performance.now();
  for (let first = 0; first < tasks; first += CONCURRENCY) {
    for (let i = first; i < Math.min(first + CONCURRENCY, tasks); i++) resolvers[order[i]!]!(i);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await waited;
  return measured(`resolve in ${engine} order`, performance.now() - start);
}

const modes: Record<string, () => Promise<EngineResult | EngineResult[][]>> = {
  throughput,
  closure: closures,
  interleaved,
  'resolve-order': resolveOrder,
  heap: heapPerTask,
  process: streaming,
  signal: sharedSignal,
};
const measure = modes[mode];
if (measure === undefined) throw new Error(`unknown mode ${mode}`);
const result = await measure();
reportToParent(result);
process.exit(0);
