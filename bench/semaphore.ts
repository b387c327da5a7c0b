// npm run bench:semaphore — DynamoSemaphore acquire+release cycles against dynalite at 1, 10 and 50
// contending holders (each level in its own process), with the DynamoDB calls each cycle costs and what
// that implies on real DynamoDB. MemorySemaphore runs the same cycles as the in-process reference.
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { DynamoSemaphore } from '../lib/semaphore/index.js';
import type { HoldersConfig, HoldersResult } from './semaphore/holders.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';

const durationMs = Number(process.env.BENCH_DURATION_MS ?? 3_000);
const holdMs = 2;
const s3WritesPerInvocation = 100;
const perItemWriteLimit = 1_000;

const server = dynalite({ createTableMs: 0 });
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
const address = server.address();
if (address === null || typeof address === 'string') throw new Error('dynalite did not bind a TCP port');
const endpoint = `http://127.0.0.1:${address.port}`;
const tableName = 'semaphore-bench';
const client = new DynamoDBClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
});
await DynamoSemaphore.createTable(client, tableName);

const scenarios = [
  { label: 'k=1, limit 10, 1 shard', limit: 10, shards: 1, k: 1 },
  { label: 'k=1, limit 10, 4 shards', limit: 10, shards: 4, k: 1 },
  { label: 'k=16 (min 1), limit 70, 2 shards (default)', limit: 70, shards: 2, k: 16 },
];
const script = fileURLToPath(new URL('./semaphore/holders.ts', import.meta.url));
const rows: Row[] = [];
let run = 0;
for (const scenario of scenarios) {
  for (const holders of [1, 10, 50]) {
    let rawCyclesPerSecond = Number.NaN;
    for (const engine of ['raw', 'dynamo', 'memory'] as const) {
      if (engine === 'memory' && scenario.shards !== 1) continue;
      const config: HoldersConfig = {
        engine,
        endpoint,
        tableName,
        name: `bench-${run++}`,
        ...scenario,
        holders,
        holdMs,
        durationMs,
      };
      const { result: r } = await runInChild<HoldersResult>(script, [JSON.stringify(config)]);
      const writesPerCycle = r.writes / r.cycles;
      const cyclesPerSecond = r.cycles / (r.elapsedMs / 1000);
      if (engine === 'raw') rawCyclesPerSecond = cyclesPerSecond;
      const row: Row = {
        engine: { raw: '2 plain UpdateItem (floor)', dynamo: 'DynamoSemaphore', memory: 'MemorySemaphore' }[
          engine
        ],
        scenario: scenario.label,
        holders,
        'cycles/s': cyclesPerSecond,
        'x floor': cyclesPerSecond / rawCyclesPerSecond,
        'acquire p50 ms': r.acquireP50Ms,
        'acquire p99 ms': r.acquireP99Ms,
        'permits/acquire': r.permitsPerAcquire,
      };
      if (engine !== 'memory') {
        Object.assign(row, {
          'writes/cycle': writesPerCycle,
          'cond. failures/cycle': r.conditionalFailures / r.cycles,
          'reads/cycle': r.reads / r.cycles,
          // Every shard item takes 1,000 writes/s on DynamoDB; random start spreads cycles over all shards.
          'DynamoDB ceiling cycles/s': Math.round((perItemWriteLimit * scenario.shards) / writesPerCycle),
          // One cycle per invocation per prefix, an invocation carrying a batch of 100 S3 writes.
          'sem writes / S3 writes @100': `${((writesPerCycle / s3WritesPerInvocation) * 100).toFixed(1)}%`,
        });
      }
      rows.push(row);
      console.error(JSON.stringify(row));
    }
  }
}
server.close();

writeResults('semaphore', rows, {
  durationMsPerRun: durationMs,
  holdMs,
  notes: [
    'The floor row does two unconditional UpdateItem calls per cycle on the same number of items with no limit: what dynalite on this machine allows at all; "x floor" is cycles/s relative to it.',
    'Holders are async loops in one child process per run; cross-process correctness is covered by test/integration/semaphore.',
    'writes/cycle counts every UpdateItem/PutItem sent for one acquire + release, failed conditional writes included (they consume write capacity on DynamoDB).',
    `DynamoDB ceiling = ${perItemWriteLimit} writes/s per shard item x shards / writes per cycle.`,
    `sem writes / S3 writes assumes one acquire + release per invocation per prefix and ${s3WritesPerInvocation} S3 writes per invocation.`,
  ],
});
