// One benchmark run of the seed's three engines, in its own process (spawned by bench/seed.ts):
// N inserts of ~300-byte records spread over D Databases, timed from the first insert to the last.
import { type Database, type Document, openDatabase, type Resource } from '../../lib/db/index.js';
import { S3BehaviourModel } from '../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { ExecutorPool } from '../../lib/pool/index.js';
import { reportToParent } from '../support/child.js';

export type Engine = 'separate-pools' | 'shared-pool' | 'promise-all';

export interface SeedRunConfig {
  engine: Engine;
  ops: number;
  /** Pool concurrency: per Database (separate), total (shared); ignored by promise-all. */
  concurrency: number;
  databases: number;
  /** `memory`: in-process store; `emulator`: `http://` connection string to the S3 emulator. */
  target:
    | { kind: 'memory'; latencyMs: number /** Absent: unlimited. */; writesPerSecond?: number }
    | { kind: 'emulator'; connectionString: string };
}

export interface SeedRunResult {
  wallMs: number;
  succeeded: number;
  failed: number;
  /** 503 SlowDown answers the model gave (memory target with throttling). */
  throttled: number;
  retries: number;
  avgBodyBytes: number;
  errorNames: Record<string, number>;
}

const config = JSON.parse(process.argv[2] ?? '{}') as SeedRunConfig;

// ~300-byte stored bodies: ~190 bytes of user data plus id/createdAt/updatedAt/version.
function payload(db: number, i: number): Document {
  return {
    id: `o-${db}-${i}`,
    customer: `customer-${i % 997}`,
    email: `user${i}@example.com`,
    sku: `SKU-${(i * 7919) % 100_000}`,
    quantity: 1 + (i % 9),
    price: Math.round(((i % 500) + 0.99) * 100) / 100,
    currency: 'EUR',
    status: 'pending',
    notes: 'standard delivery, leave at front desk',
  };
}

const target = config.target;
const model =
  target.kind === 'memory' && (target.latencyMs > 0 || target.writesPerSecond !== undefined)
    ? new S3BehaviourModel({
        writesPerSecond: target.writesPerSecond ?? Number.POSITIVE_INFINITY,
        // p99 = 4 x median: S3's small-PUT tail is long; the model draws lognormal latencies.
        ...(target.latencyMs > 0
          ? { latency: { medianMs: target.latencyMs, p99Ms: target.latencyMs * 4 } }
          : {}),
      })
    : undefined;

const bucket = `seed-${process.pid}`;
const databases: Database[] = [];
const resources: Resource[] = [];
for (let d = 0; d < config.databases; d++) {
  const connectionString =
    config.target.kind === 'memory' ? `memory://${bucket}` : config.target.connectionString;
  const db = openDatabase(connectionString, {
    tenant: `tenant-${d}`,
    pool: config.engine === 'separate-pools' ? { concurrency: config.concurrency } : false,
    ...(model !== undefined ? { behaviour: model } : {}),
  });
  databases.push(db);
  resources.push(await db.createResource({ name: 'orders' }));
}
const shared =
  config.engine === 'shared-pool' ? new ExecutorPool({ concurrency: config.concurrency }) : undefined;

const perDb = Array.from({ length: config.databases }, (_, d) =>
  Array.from(
    { length: Math.floor(config.ops / config.databases) + (d < config.ops % config.databases ? 1 : 0) },
    (_, i) => payload(d, i),
  ),
);

const started = performance.now();
const outcomes = await Promise.all(
  resources.map((resource, d) => {
    const items = perDb[d]!;
    if (shared === undefined) return resource.insertMany(items);
    return Promise.all(
      items.map((item) =>
        shared
          .enqueue(({ signal }) => resource.insert(item, { signal }))
          .then(
            (record) => ({ ok: true as const, id: record.id, record }),
            (error: unknown) => ({ ok: false as const, id: undefined, error }),
          ),
      ),
    );
  }),
);
const wallMs = performance.now() - started;

let succeeded = 0;
let failed = 0;
let bodyBytes = 0;
const errorNames: Record<string, number> = {};
for (const list of outcomes) {
  for (const outcome of list) {
    if (outcome.ok) {
      succeeded += 1;
      if (succeeded <= 100) bodyBytes += Buffer.byteLength(JSON.stringify(outcome.record));
    } else {
      failed += 1;
      const name = (outcome.error as { name?: string } | undefined)?.name ?? 'unknown';
      errorNames[name] = (errorNames[name] ?? 0) + 1;
    }
  }
}
const retries =
  (shared?.getStats().retryCount ?? 0) +
  databases.reduce((sum, db) => sum + (db.pool?.getStats().retryCount ?? 0), 0);
await Promise.all(databases.map((db) => db.disconnect()));
shared?.stop();

reportToParent<SeedRunResult>({
  wallMs,
  succeeded,
  failed,
  throttled: model?.stats().total.throttled ?? 0,
  retries,
  avgBodyBytes: succeeded > 0 ? Math.round(bodyBytes / Math.min(succeeded, 100)) : 0,
  errorNames,
});
