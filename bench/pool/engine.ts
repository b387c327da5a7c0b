// One engine, one measurement, in its own process (spawned by bench/pool.ts through runInChild).
// argv: <engine> <tasks> <mode: throughput | heap | process>
import fastq from 'fastq';
import pLimit from 'p-limit';
import PQueue from 'p-queue';
import { ExecutorPool } from '../../lib/pool/index.js';
import { reportToParent } from '../support/child.js';

export interface EngineResult {
  engine: string;
  tasks: number;
  mode: string;
  ms: number;
  opsPerSec: number;
  heapBytesPerQueuedTask?: number;
  heapUsedBytes: number;
}

const CONCURRENCY = 100;
const [engine = 'pool', tasksArg = '100000', mode = 'throughput'] = process.argv.slice(2);
const tasks = Number(tasksArg);

/** The unit of work: one event-loop hop, as an I/O completion would be. */
const work = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const never = (): Promise<void> => new Promise(() => {});

/** Deterministic priorities 0..9 in scrambled order (so a sorted insert lands mid-queue). */
let seed = 12345;
function nextPriority(): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % 10;
}

interface Engine {
  /** Submits one task and returns its promise. */
  submit(fn: () => Promise<void>): Promise<void>;
}

function makeEngine(name: string): Engine {
  switch (name) {
    case 'pool': {
      // Priorities, retries and timeouts all on: the configuration the targets are stated for.
      const pool = new ExecutorPool({
        concurrency: CONCURRENCY,
        retries: 3,
        retryDelay: 100,
        timeout: 30_000,
      });
      return { submit: (fn) => pool.enqueue(fn, { priority: nextPriority() }) };
    }
    case 'fastq': {
      const queue = fastq.promise((fn: () => Promise<void>) => fn(), CONCURRENCY);
      return { submit: (fn) => queue.push(fn) };
    }
    case 'p-queue': {
      const queue = new PQueue({ concurrency: CONCURRENCY });
      return { submit: (fn) => queue.add(fn) };
    }
    case 'p-queue-priority': {
      const queue = new PQueue({ concurrency: CONCURRENCY });
      return { submit: (fn) => queue.add(fn, { priority: nextPriority() }) };
    }
    case 'p-limit': {
      const limit = pLimit(CONCURRENCY);
      return { submit: (fn) => limit(fn) };
    }
    case 'promise-all':
      return { submit: (fn) => fn() };
    default:
      throw new Error(`unknown engine ${name}`);
  }
}

const retained: unknown[] = [];

function measured(name: string, ms: number, extra: Partial<EngineResult> = {}): EngineResult {
  return {
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
  const start = performance.now();
  const all: Promise<void>[] = new Array(tasks);
  for (let i = 0; i < tasks; i++) all[i] = e.submit(work);
  await Promise.all(all);
  return measured(engine, performance.now() - start);
}

/** Streams `tasks` items through ExecutorPool.process(): nothing per item is kept. */
async function streaming(): Promise<EngineResult> {
  const pool = new ExecutorPool({ concurrency: CONCURRENCY, retries: 3, retryDelay: 100, timeout: 30_000 });
  function* items() {
    for (let i = 0; i < tasks; i++) yield i;
  }
  let sum = 0;
  const start = performance.now();
  const summary = await pool.process(items(), work, {
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

const result =
  mode === 'heap' ? await heapPerTask() : mode === 'process' ? await streaming() : await throughput();
reportToParent(result);
process.exit(0);
