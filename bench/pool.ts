// npm run bench:pool — ExecutorPool vs fastq, p-queue (with and without priority), p-limit and unbounded
// Promise.all; each engine in its own process. Work is one setImmediate hop; concurrency 100.
import { fileURLToPath } from 'node:url';
import type { EngineResult } from './pool/engine.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';

const script = fileURLToPath(new URL('./pool/engine.ts', import.meta.url));
const nodeArgs = ['--expose-gc', '--max-old-space-size=4096'];
const MB = 1024 * 1024;

interface Measured extends EngineResult {
  peakRssBytes: number;
}

async function run(engine: string, tasks: number, mode: string): Promise<Measured> {
  const { result, peakRssBytes } = await runInChild<EngineResult>(
    script,
    [engine, String(tasks), mode],
    nodeArgs,
  );
  process.stderr.write(`  ${result.engine} ${tasks} ${mode}: ${Math.round(result.opsPerSec)} ops/s\n`);
  return { ...result, peakRssBytes };
}

/** Best of `rounds` (engines interleaved per round, so load from elsewhere hits them alike). */
async function best(
  engines: readonly string[],
  tasks: number,
  rounds: number,
): Promise<Map<string, Measured>> {
  const bestOf = new Map<string, Measured>();
  for (let round = 0; round < rounds; round++) {
    for (const engine of engines) {
      const m = await run(engine, tasks, 'throughput');
      const prev = bestOf.get(engine);
      if (prev === undefined || m.opsPerSec > prev.opsPerSec) bestOf.set(engine, m);
    }
  }
  return bestOf;
}

const queued = ['pool', 'fastq', 'p-queue', 'p-queue-priority', 'p-limit'];
const started = performance.now();

process.stderr.write('100k tasks, 3 rounds\n');
const small = await best([...queued, 'promise-all'], 100_000, 3);
process.stderr.write('heap per queued task (100k queued behind 100 busy slots)\n');
const heap = new Map<string, Measured>();
for (const engine of queued) heap.set(engine, await run(engine, 100_000, 'heap'));
process.stderr.write(
  '1M tasks, once (p-queue with priority skipped: its sorted array insert is O(n) per task)\n',
);
const large = await best(['pool', 'fastq', 'p-queue', 'p-limit', 'promise-all'], 1_000_000, 1);
const streamed = await run('pool', 1_000_000, 'process');

const label: Record<string, string> = {
  pool: 'ExecutorPool (priority+retries+timeout)',
  fastq: 'fastq',
  'p-queue': 'p-queue',
  'p-queue-priority': 'p-queue (priority)',
  'p-limit': 'p-limit',
  'promise-all': 'Promise.all (unbounded)',
  'pool.process': 'ExecutorPool.process() (streamed)',
};

function row(m: Measured, fastq: Measured | undefined): Row {
  return {
    engine: label[m.engine] ?? m.engine,
    tasks: m.tasks,
    'ops/s': Math.round(m.opsPerSec),
    'vs fastq': fastq === undefined ? undefined : Number((m.opsPerSec / fastq.opsPerSec).toFixed(2)),
    'peak RSS MB': Math.round(m.peakRssBytes / MB),
    'heap B/queued task': m.tasks === 100_000 ? heapPerTask(m.engine) : undefined,
  };
}

function heapPerTask(engine: string): number | undefined {
  const h = heap.get(engine)?.heapBytesPerQueuedTask;
  return h === undefined ? undefined : Math.round(h);
}

const rows: Row[] = [
  ...[...small.values()].map((m) => row(m, small.get('fastq'))),
  ...[...large.values()].map((m) => row(m, large.get('fastq'))),
  row(streamed, large.get('fastq')),
];

const pool100k = small.get('pool')!.opsPerSec;
const targets = {
  'ops/s vs fastq at 100k (>= 1)': pool100k / small.get('fastq')!.opsPerSec,
  'ops/s vs fastq at 1M (>= 1)': large.get('pool')!.opsPerSec / large.get('fastq')!.opsPerSec,
  'ops/s vs p-queue with priority at 100k (>= 3)': pool100k / small.get('p-queue-priority')!.opsPerSec,
  'process() 1M peak RSS MB (<= 150)': streamed.peakRssBytes / MB,
  'heap bytes per queued task (<= 300)': heap.get('pool')!.heapBytesPerQueuedTask!,
};
const targetRows: Row[] = Object.entries(targets).map(([target, value]) => ({
  target,
  measured: Number(value.toFixed(2)),
}));

writeResults('pool', rows, {
  concurrency: 100,
  work: 'one setImmediate hop per task',
  method:
    'Each engine runs in its own Node process. 100k: best of 3 interleaved rounds; 1M: one run each. ' +
    'All tasks are submitted up front and awaited with Promise.all, except process(), which streams a generator. ' +
    'Heap per queued task: 100 never-ending tasks fill the slots, 100k more are queued with one shared function ' +
    '(no caller closure) while the caller keeps their promises; (heapUsed after - before) / 100k after full GCs.',
  targets,
  durationSeconds: Math.round((performance.now() - started) / 1000),
});
console.log(`\n${targetRows.map((r) => `${r.target}: ${r.measured}`).join('\n')}`);
