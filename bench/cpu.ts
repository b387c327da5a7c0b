// npm run bench:cpu — CPU per message of the ingestion path, three ways in one run:
// 1. end to end: the issue's `npm start -- --tenants 50 --messages N --bad-ratio 0 --batch-size 100
//    --concurrency 4` as a child, user + system CPU of its whole process tree (/proc/self/stat cutime/cstime);
// 2. split: the real handler in one process (bench/cpu/engine.ts), the emulators in another
//    (bench/cpu/emulators.ts), the same load handed over as Lambda batches; plus the plan stage alone;
// 3. a profile of (2) under --cpu-prof: self time by package, by the repo folder that called, and the top
//    functions (bench/support/cpu-profile.ts);
// 4. the local pipeline's SQS traffic per message (send, receive, delete through the embedded stack, client
//    and emulator), its SQS client (`createLocalSqsClient`) and the SDK's default one taking turns
//    (bench/cpu/sqs-traffic.ts).
// BENCH_CPU_MESSAGES (default 20000) sets N; BENCH_CPU_E2E_RUNS (default 3) the end-to-end runs and
// BENCH_CPU_ROUNDS (default 3) the split runs (median, min-max). BENCH_CPU_BASELINE=<git ref> (default unset)
// checks that commit out beside this tree (bench/support/baseline-worktree.ts, `npm ci` in it) and runs its
// end to end with this tree's, taking turns, the order swapped each round: the ratio per round is the figure
// a shared machine cannot move, where an absolute CPU time moves by a third between sittings.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CpuEngineResult } from './cpu/engine.js';
import type { SqsTrafficResult } from './cpu/sqs-traffic.js';
import { type BaselineWorktree, checkoutBaseline } from './support/baseline-worktree.js';
import { runInChild } from './support/child.js';
import { summarizeCpuProfile } from './support/cpu-profile.js';
import { type Row, writeResults } from './support/report.js';
import { formatSpread, spreadOf } from './support/stats.js';

const MESSAGES = Number(process.env.BENCH_CPU_MESSAGES ?? 20_000);
const ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 3);
const E2E_RUNS = Number(process.env.BENCH_CPU_E2E_RUNS ?? 3);
const TENANTS = 50;
const BATCH = 100;
const CONCURRENCY = 4;
const engine = join(import.meta.dirname, 'cpu', 'engine.ts');
const args = [String(MESSAGES), String(TENANTS), String(BATCH), String(CONCURRENCY)];

/** CPU ms of this process's waited-for children (cutime + cstime, 10 ms ticks). */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** One end-to-end run of the command in `cwd` (this tree, or a baseline's checkout). */
function endToEnd(cwd = process.cwd()): Promise<{ cpuMs: number; wallMs: number }> {
  const before = childrenCpuMs();
  const started = performance.now();
  const cli = [
    'start',
    '--',
    ...['--tenants', String(TENANTS), '--messages', String(MESSAGES), '--bad-ratio', '0'],
    ...['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCY), '--json'],
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('npm', cli, { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const summary = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as {
        lost?: number;
        written?: number;
      };
      if (code !== 0 || summary.lost !== 0) {
        reject(new Error(`npm start exited with ${code}, lost ${summary.lost}\n${out.slice(-1000)}`));
        return;
      }
      resolve({ cpuMs: childrenCpuMs() - before, wallMs: performance.now() - started });
    });
  });
}

interface EndToEndRun {
  cpuMs: number;
  wallMs: number;
  loadAtStart: number;
}

async function timedEndToEnd(label: string, cwd?: string): Promise<EndToEndRun> {
  const load = loadavg()[0] ?? 0;
  process.stderr.write(`end to end, ${label}: npm start with ${MESSAGES} messages (load ${load})\n`);
  const run = { ...(await endToEnd(cwd)), loadAtStart: load };
  process.stderr.write(`  ${(run.cpuMs / MESSAGES).toFixed(2)} ms CPU per message\n`);
  return run;
}

const baselineRef = process.env.BENCH_CPU_BASELINE;
let baseline: BaselineWorktree | undefined;
if (baselineRef !== undefined && baselineRef !== '') {
  process.stderr.write(`baseline: checking ${baselineRef} out and installing its dependencies\n`);
  baseline = checkoutBaseline(baselineRef);
  // Ctrl-C mid-run: the checkout (a few hundred MB with its node_modules) goes with the run.
  process.once('SIGINT', () => {
    baseline?.dispose();
    process.exit(130);
  });
}

const loadAtStart = loadavg();
const e2eRuns: EndToEndRun[] = [];
const baselineRuns: EndToEndRun[] = [];
try {
  for (let run = 0; run < E2E_RUNS; run++) {
    const round = `${run + 1}/${E2E_RUNS}`;
    if (baseline === undefined) {
      e2eRuns.push(await timedEndToEnd(round));
    } else if (run % 2 === 0) {
      baselineRuns.push(await timedEndToEnd(`${round} baseline ${baseline.ref}`, baseline.dir));
      e2eRuns.push(await timedEndToEnd(`${round} this tree`));
    } else {
      e2eRuns.push(await timedEndToEnd(`${round} this tree`));
      baselineRuns.push(await timedEndToEnd(`${round} baseline ${baseline.ref}`, baseline.dir));
    }
  }
} finally {
  baseline?.dispose();
}
const usPerMessage = (r: EndToEndRun) => (r.cpuMs / MESSAGES) * 1000;
const e2e = spreadOf(e2eRuns.map(usPerMessage));
const againstBaseline =
  baseline === undefined
    ? undefined
    : {
        ref: baseline.ref,
        commit: baseline.commit,
        baselineUsPerMessage: spreadOf(baselineRuns.map(usPerMessage)),
        thisOverBaseline: spreadOf(e2eRuns.map((r, i) => r.cpuMs / baselineRuns[i]!.cpuMs)),
        baselineRuns,
      };

const splits: CpuEngineResult[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const { result } = await runInChild<CpuEngineResult>(engine, args);
  if (result.failedRecords > 0) throw new Error(`bench:cpu: ${result.failedRecords} records failed`);
  splits.push(result);
  process.stderr.write(
    `  split ${round + 1}/${ROUNDS}: handler ${(result.handlerCpuMs / result.messages).toFixed(2)} ms/msg, emulators ${(result.emulatorCpuMs / result.messages).toFixed(2)} ms/msg\n`,
  );
}

const profileDir = mkdtempSync(join(tmpdir(), 's3-ingest-cpu-prof-'));
let profile: ReturnType<typeof summarizeCpuProfile>;
try {
  await runInChild<CpuEngineResult>(engine, args, ['--cpu-prof', '--cpu-prof-dir', profileDir]);
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error('bench:cpu: no .cpuprofile written');
  profile = summarizeCpuProfile(join(profileDir, file), 15);
} finally {
  rmSync(profileDir, { recursive: true, force: true });
}

process.stderr.write('SQS traffic: local pipeline client and SDK default, taking turns\n');
const { result: sqsTraffic } = await runInChild<SqsTrafficResult>(
  join(import.meta.dirname, 'cpu', 'sqs-traffic.ts'),
  ['12'],
);
const sqsLocal = spreadOf(sqsTraffic.localClientUs);
const sqsDefault = spreadOf(sqsTraffic.sdkDefaultUs);
const sqsRatio = spreadOf(sqsTraffic.localClientUs.map((us, i) => us / sqsTraffic.sdkDefaultUs[i]!));

const perMessage = (pick: (r: CpuEngineResult) => number) =>
  spreadOf(splits.map((r) => (pick(r) / r.messages) * 1000));
const handler = perMessage((r) => r.handlerCpuMs);
const emulators = perMessage((r) => r.emulatorCpuMs);
const plan = perMessage((r) => r.planCpuMs);
const share = (ms: number) => `${((ms / profile.totalMs) * 100).toFixed(1)}%`;
const rows: Row[] = [
  {
    measure: 'end to end (npm start, process tree)',
    'µs CPU per message': formatSpread(e2e, 0),
    runs: E2E_RUNS,
  },
  ...(againstBaseline === undefined
    ? []
    : [
        {
          measure: `end to end, baseline ${againstBaseline.commit.slice(0, 7)}, taking turns with this tree`,
          'µs CPU per message': formatSpread(againstBaseline.baselineUsPerMessage, 0),
          runs: E2E_RUNS,
        },
        {
          measure: 'end to end, this tree / baseline (per round)',
          'µs CPU per message': `${formatSpread(againstBaseline.thisOverBaseline, 2)}x`,
          runs: E2E_RUNS,
        },
      ]),
  {
    measure: 'handler process (SDK clients, pools, plan, settle)',
    'µs CPU per message': formatSpread(handler, 0),
    runs: ROUNDS,
  },
  {
    measure: 'emulator process (fauxqs S3 + SQS, dynalite)',
    'µs CPU per message': formatSpread(emulators, 0),
    runs: ROUNDS,
  },
  {
    measure: 'plan stage alone (parse, validate, group)',
    'µs CPU per message': formatSpread(plan, 1),
    runs: ROUNDS,
  },
  {
    measure: 'SQS traffic, local pipeline client (send, receive, delete; client + emulator)',
    'µs CPU per message': formatSpread(sqsLocal, 0),
    runs: sqsLocal.n,
  },
  {
    measure: 'SQS traffic, SDK default client (same calls, taking turns)',
    'µs CPU per message': formatSpread(sqsDefault, 0),
    runs: sqsDefault.n,
  },
];
writeResults('cpu', rows, {
  description: `CPU per message: ${MESSAGES} messages, ${TENANTS} tenants, batches of ${BATCH}, ${CONCURRENCY} containers, no bad messages. End to end = the whole npm start process tree (start-up, emulators, SQS polling, read-back included); split = handler in-process against the emulators in a child process. Figures: median (min-max) of the runs`,
  loadAverageAtStart: loadAtStart,
  loadAverageAtEnd: loadavg(),
  endToEnd: { usPerMessage: e2e, runs: e2eRuns, againstBaseline },
  split: {
    handlerUsPerMessage: handler,
    emulatorUsPerMessage: emulators,
    planUsPerMessage: plan,
    runs: splits,
  },
  sqsTraffic: {
    note: 'blocks of 500 messages through the embedded stack, the two clients taking turns; ratio per block',
    localClientUsPerMessage: sqsLocal,
    sdkDefaultUsPerMessage: sqsDefault,
    localOverDefault: sqsRatio,
  },
  profile: {
    note: 'self time of the handler process under --cpu-prof; samples after an await have no caller frame of ours',
    totalMs: profile.totalMs,
    byPackage: profile.byPackage.map((r) => ({ ...r, share: share(r.selfMs) })),
    byCaller: profile.byCaller.map((r) => ({ ...r, share: share(r.selfMs) })),
    topFunctions: profile.byFunction.map((r) => ({ ...r, share: share(r.selfMs) })),
  },
});
