// npm run bench:db — CPU per S3 write through Database (ExecutorPool + S3ObjectStore + SDK v3) against an
// in-process HTTP server answering like S3 (in a worker thread, so its CPU is not counted). Before: the pool's
// signal passed per call as `{ abortSignal }` (the SDK resolves the middleware stack on every call). Then
// each step of `createS3Client` (bench/db/engine.ts), the last being `createS3Client` itself.
// `node --cpu-prof --import tsx bench/db/profile.ts` profiles the last one alone.
// Each round is one process in which the setups alternate chunks of writes; the ratio is taken per round.
import { fileURLToPath } from 'node:url';
import { CLIENT_SETUPS, type ClientSetup, type DbSetupResult } from './db/setups.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';

const script = fileURLToPath(new URL('./db/engine.ts', import.meta.url));
const WRITES = Number(process.env.BENCH_DB_WRITES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_DB_ROUNDS ?? 3);

const rounds: Map<ClientSetup, DbSetupResult>[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const { result } = await runInChild<DbSetupResult[]>(script, [String(WRITES)]);
  rounds.push(new Map(result.map((r) => [r.setup, r])));
  process.stderr.write(
    `  round ${round + 1}: ${result.map((r) => `${r.setup} ${r.cpuUsPerWrite.toFixed(0)} us`).join(', ')}\n`,
  );
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const of = (setup: ClientSetup, pick: (r: DbSetupResult) => number) => rounds.map((r) => pick(r.get(setup)!));
const label: Record<ClientSetup, string> = {
  'per-call-signal': 'before: send(cmd, { abortSignal }) per call',
  'scoped-signal': 'step 1: cached stack, signal via async context',
  'checksums-when-required': 'step 2: + checksums WHEN_REQUIRED',
  'unused-middlewares-dropped': 'step 3: + unused per-call middlewares dropped',
  'signer-reused': 'step 4: + one SigV4 signer reused',
  'sha256-key-cache': 'step 5: + HMAC keys kept as key objects',
  'signing-key-reused': "step 6: + the last signing key reused (Node's http client)",
  'create-s3-client': "after: createS3Client (step 6 on undici's HTTP client)",
};
const rows: Row[] = CLIENT_SETUPS.map((setup) => ({
  setup: label[setup],
  'writes/round': WRITES,
  'CPU us/write (median)': median(of(setup, (r) => r.cpuUsPerWrite)),
  'writes/s (median)': median(of(setup, (r) => r.writesPerSec)),
  'CPU vs before (median of rounds)': median(
    rounds.map((r) => r.get(setup)!.cpuUsPerWrite / r.get('per-call-signal')!.cpuUsPerWrite),
  ),
}));
writeResults('db', rows, {
  description:
    'Main-thread CPU per upsert through Database + ExecutorPool (concurrency 32) + S3ObjectStore; fake S3 in a worker thread; setups alternate chunks of 250 writes in one process per round',
  rounds: ROUNDS,
  target: 'after <= 0.6x before',
  undiciOverNodeHttp: median(
    rounds.map((r) => r.get('create-s3-client')!.cpuUsPerWrite / r.get('signing-key-reused')!.cpuUsPerWrite),
  ),
  perRound: rounds.map((r) => Object.fromEntries([...r].map(([k, v]) => [k, v.cpuUsPerWrite]))),
});
