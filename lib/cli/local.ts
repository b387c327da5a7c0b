import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { createS3Client } from '../db/s3-client.js';
import type { InvocationSummary } from '../ingest/handler/ingest-handler.js';
import type { InvocationCounts } from '../ingest/handler/settle/invocation-metrics.js';
import { Producer } from '../ingest/producer.js';
import { DEMO_RESOURCES, generateDemoLoad } from '../local/demo/demo-load.js';
import { type DemoVerification, verifyDemo } from '../local/demo/demo-verify.js';
import { clientConfigFor } from '../local/emulators/local-aws.js';
import type { EventSourceRunner, EventSourceRunnerStats } from '../local/lambda/event-source-runner.js';
import { startLocalPipeline } from '../local/lambda/local-pipeline.js';
import type { LocalProducer, ProducerQueue } from '../local/lambda/producer-queues.js';
import { type CliIo, EXIT } from './io.js';
import { COUNTING_ONLY_S3, DASHBOARD_READY, DashboardWiring } from './local-dashboard.js';
import { serveLocal, untilStopSignal } from './local-serve.js';

export const LOCAL_HELP = `Usage: s3-ingest local [options]   (npm start)

Runs the whole pipeline in this process: embedded AWS (fauxqs for SQS + S3, dynalite for DynamoDB),
provisioned like the deployed stack, the local SQS event-source runner invoking the real handler
(createIngestHandler), and a seeded demo load. Then reads the bucket and the DLQ back and compares them
with the load's expected final state.

Options:
  --tenants N          tenants in the demo load (default 5)
  --messages N         messages in total, bad ones included (default 2000)
  --bad-ratio R        share of bad messages, 0..1 (default 0.02)
  --seed N             demo load seed (default 1)
  --batch-size N       records per invocation, 1..10000 (default 10)
  --concurrency N      concurrent invocations (default 4)
  --chaos              put the S3 chaos proxy (throttling at 3,500 writes/s per prefix, latency, faults)
                       in front of S3
  --slowdown-rate N    with --chaos: writes per second per prefix before SlowDown (default 3500)
  --fifo               FIFO queues (ingest + DLQ): batches of at most 10, message group per record; the
                       demo sends every round at once and relies on the queue's order
  --producers          two tenant-bound producers, each with its own queue and half of the tenants
                       (SOURCE_TENANTS); one producer also tries to write the other's tenant, which the
                       function refuses (tenant-not-allowed) and the summary shows
  --json               print the summary as one JSON object on the last line of stdout
  --verbose            show the handler's structured logs and EMF metric lines (stderr)
  --serve              no demo: keep the stack and the handler running for your own messages, print
                       the queue URL and ready-to-paste send/inspect/dlq command lines, one line per
                       invocation; Ctrl-C (or SIGTERM) stops it cleanly
  --dashboard          serve a live page on 127.0.0.1 (URL printed at start): the CloudWatch dashboard's
                       graphs from the handler's EMF lines, queue depths, each prefix's fleet rate against
                       its accepted writes and the S3 limit; with the demo, it stays up after the summary
                       until Ctrl-C
  --dashboard-port N   its port (default: any free port)
  -h, --help           this help`;

/** The read-back verification (written, dead-lettered, lost, duplicated, problems) plus how the run went. */
export interface LocalSummary extends DemoVerification {
  sent: number;
  /** The ingest queues' kind (`--fifo`). */
  queue: 'standard' | 'fifo';
  /** Tenant-bound producers (`--producers`): each producer's tenants. */
  producers: Record<string, string[]>;
  /** Writes the function refused because their producer may not write the tenant (`tenant-not-allowed`). */
  crossTenantRefused: number;
  invocations: number;
  /** Records SQS delivered again (transient failures, timeouts). */
  redelivered: number;
  /** Pool retries of S3 calls inside invocations. */
  retries: number;
  /** S3 SlowDown answers the pools saw (`S3SlowDowns`). */
  s3SlowDowns: number;
  /** Pool tasks that hit their per-attempt timeout. */
  timeouts: number;
  /** S3 write calls (PUT, DELETE), every attempt counted (`Writes`). */
  writes: number;
  /** Pool tasks that failed for good, expected answers (412 of a redelivered insert, 404) excluded. */
  poolErrors: number;
  /** Records returned for redelivery, by cause (`RecordsRedelivered`). */
  redeliveredByCause: Record<string, number>;
  /** The highest write rate one invocation's booked tenants paced at, writes/s (`BookedWriteRate`). */
  bookedRatePeak: number;
  /** Per-attempt S3 call time over every invocation's `ExecutionMs` samples (fleet percentiles). */
  executionMs: { p50: number; p95: number; p99: number };
  /** Lambda containers started (cold starts). */
  containers: number;
  invocationMs: { p50: number; p95: number; p99: number };
  durationMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
}

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`--${name} must be a non-negative integer, got ${raw}`);
  return value;
}

export async function localCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenants: { type: 'string' },
      messages: { type: 'string' },
      'bad-ratio': { type: 'string' },
      seed: { type: 'string' },
      'batch-size': { type: 'string' },
      concurrency: { type: 'string' },
      chaos: { type: 'boolean', default: false },
      fifo: { type: 'boolean', default: false },
      producers: { type: 'boolean', default: false },
      'slowdown-rate': { type: 'string' },
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      serve: { type: 'boolean', default: false },
      dashboard: { type: 'boolean', default: false },
      'dashboard-port': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${LOCAL_HELP}\n`);
    return EXIT.ok;
  }
  let load: ReturnType<typeof generateDemoLoad>;
  let batchSize: number;
  let concurrency: number;
  let slowdownRate: number;
  let dashboard: DashboardWiring | undefined;
  try {
    load = generateDemoLoad({
      tenants: positiveInt('tenants', values.tenants, 5),
      messages: positiveInt('messages', values.messages, 2000),
      badRatio: values['bad-ratio'] === undefined ? 0.02 : Number(values['bad-ratio']),
      seed: positiveInt('seed', values.seed, 1),
    });
    batchSize = positiveInt('batch-size', values['batch-size'], 10);
    concurrency = positiveInt('concurrency', values.concurrency, 4);
    slowdownRate = positiveInt('slowdown-rate', values['slowdown-rate'], 3500);
    const dashboardPort = positiveInt('dashboard-port', values['dashboard-port'], 0);
    if (dashboardPort > 65_535)
      throw new Error(`--dashboard-port must be at most 65535, got ${dashboardPort}`);
    if (values['dashboard-port'] !== undefined && !values.dashboard)
      throw new Error('--dashboard-port needs --dashboard');
    if (values.dashboard) dashboard = new DashboardWiring(dashboardPort);
    if (values.fifo && batchSize > 10)
      throw new Error('--batch-size must be at most 10 with --fifo (as in Lambda)');
  } catch (error) {
    io.stderr.write(`s3-ingest local: ${(error as Error).message}\n`);
    return EXIT.usage;
  }

  const pipelineOptions = {
    resources: DEMO_RESOURCES,
    env: io.env,
    batchSize,
    concurrency,
    verbose: values.verbose === true,
    fifo: values.fifo === true,
    producers: values.producers ? splitTenants(load.tenants) : [],
    ...(values.chaos ? { slowdownRate } : dashboard === undefined ? {} : { chaos: COUNTING_ONLY_S3 }),
  };
  if (values.serve) return serveLocal(io, pipelineOptions, dashboard);

  const started = performance.now();
  const invocations: InvocationSummary[] = [];
  const durations: number[] = [];
  const progress = new Progress(io, load.messages);
  const pipeline = await startLocalPipeline({
    ...pipelineOptions,
    ...(dashboard === undefined ? {} : { metricLines: dashboard.metricLines }),
    onInvocation: (result, invocation) => {
      dashboard?.recordInvocation(result);
      durations.push(result.durationMs);
      if (invocation !== undefined) invocations.push(invocation);
      progress.update(totalStats(pipeline.runners));
    },
  });
  const { aws, resources, sqs, producerQueues } = pipeline;
  const fifo = values.fifo === true;
  const admin = clientConfigFor(aws.emulatorEndpoints);
  // The read-back GETs every stored object: the lean client (no response checksums, one signer) reads the same
  // bytes for 0.55-0.6x the CPU per GET (client and emulator) of the SDK default stack; emulators, no proxy.
  const s3Direct = createS3Client({
    endpoint: admin.s3.endpoint,
    region: admin.region,
    credentials: admin.credentials,
  });
  let page: Awaited<ReturnType<DashboardWiring['start']>> | undefined;
  try {
    page = await dashboard?.start(pipeline);
    if (page !== undefined) io.stdout.write(`${DASHBOARD_READY} ${page.url}\n`);
    // Each tenant's writes go through its producer's queue (or the one queue).
    const queueOf = (tenant: string) =>
      producerQueues.find((q) => q.producer.tenants.includes(tenant))?.queueUrl ?? resources.queueUrl;
    const producers = new Map<string, Producer>();
    const producerFor = (queueUrl: string) => {
      let producer = producers.get(queueUrl);
      if (producer === undefined) {
        producer = new Producer({ queueUrl, client: sqs, resources: DEMO_RESOURCES });
        producers.set(queueUrl, producer);
      }
      return producer;
    };
    const idle = () => Promise.all(pipeline.runners.map((r) => r.waitForIdle({ timeoutMs: 300_000 })));
    let sent = 0;
    for (const round of load.rounds) {
      for (const [queueUrl, writes] of groupBy(round.writes, (w) => queueOf(w.tenant))) {
        const results = await producerFor(queueUrl).sendMany(writes);
        sent += results.filter((r) => r.error === undefined).length;
      }
      // Bad messages fail the contract before any tenant binding: they go through the first queue.
      sent += await sendRaw(
        sqs,
        producerQueues[0]?.queueUrl ?? resources.queueUrl,
        round.bad.map((b) => b.body),
        fifo,
      );
      // Standard queues do not order across batches: each round lands before the next one is sent. A FIFO
      // queue keeps each record's writes (one message group) in order: every round goes out at once.
      if (!fifo) await idle();
    }
    const refusals = await sendCrossTenantProbe(producerQueues, producerFor);
    sent += refusals.length;
    await idle();
    const stats = totalStats(await Promise.all(pipeline.runners.map((r) => r.stop())));
    const containers = pipeline.containers.size;
    await pipeline.containers.close();
    progress.done(stats);
    const verification = await verifyDemo({
      s3: s3Direct,
      sqs: new SQSClient(admin.sqs),
      bucket: resources.bucket,
      dlqUrl: resources.dlqUrl,
      load,
      expectedRefusals: refusals,
    });
    durations.sort((a, b) => a - b);
    const summary: LocalSummary = {
      sent,
      queue: fifo ? 'fifo' : 'standard',
      producers: Object.fromEntries(producerQueues.map((q) => [q.producer.name, [...q.producer.tenants]])),
      crossTenantRefused: verification.deadLetteredByReason['tenant-not-allowed'] ?? 0,
      ...verification,
      invocations: stats.invocations,
      redelivered: stats.redelivered,
      retries: sum(invocations, 'Retries'),
      s3SlowDowns: sum(invocations, 'S3SlowDowns'),
      timeouts: sum(invocations, 'Timeouts'),
      writes: sum(invocations, 'Writes'),
      poolErrors: sum(invocations, 'PoolErrors'),
      redeliveredByCause: sumSplits(invocations.map((i) => i.splits.RecordsRedelivered)),
      bookedRatePeak: Math.max(0, ...invocations.map((i) => i.BookedWriteRate)),
      executionMs: percentiles(invocations.flatMap((i) => i.samples.ExecutionMs)),
      containers,
      invocationMs: {
        p50: percentile(durations, 50),
        p95: percentile(durations, 95),
        p99: percentile(durations, 99),
      },
      durationMs: Math.round(performance.now() - started),
    };
    printSummary(io, summary);
    if (values.json) io.stdout.write(`${JSON.stringify(summary)}\n`);
    if (page !== undefined) {
      io.stdout.write(`${DASHBOARD_READY} ${page.url} shows the run until Ctrl-C\n`);
      await untilStopSignal();
    }
    return summary.lost === 0 && summary.duplicated === 0 ? EXIT.ok : EXIT.failure;
  } finally {
    s3Direct.destroy();
    await page?.stop();
    await pipeline.stop();
  }
}

/** Two producers, the first half of the tenants and the rest (`--producers`). */
function splitTenants(tenants: readonly string[]): LocalProducer[] {
  const half = Math.ceil(tenants.length / 2);
  const second = tenants.slice(half);
  return [
    { name: 'alpha', tenants: tenants.slice(0, half) },
    ...(second.length === 0 ? [] : [{ name: 'beta', tenants: second }]),
  ];
}

/**
 * With two producers: the first sends one good write for a tenant of the second, through its own queue.
 * The function must refuse it (`tenant-not-allowed`); the verification checks it did and wrote nothing.
 */
async function sendCrossTenantProbe(
  queues: readonly ProducerQueue[],
  producerFor: (queueUrl: string) => Producer,
): Promise<{ id: string; reason: string }[]> {
  const [from, victim] = queues;
  const tenant = victim?.producer.tenants[0];
  if (from === undefined || tenant === undefined) return [];
  const id = 'cross-tenant-probe';
  await producerFor(from.queueUrl).send({
    tenant,
    resource: 'orders',
    op: 'upsert',
    id,
    data: { label: 'probe' },
  });
  return [{ id, reason: 'tenant-not-allowed' }];
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  return groups;
}

function totalStats(
  stats: readonly EventSourceRunnerStats[] | readonly EventSourceRunner[],
): EventSourceRunnerStats {
  const all = stats.map((s) => ('stats' in s ? s.stats : s));
  const total = { ...all[0]! };
  for (const s of all.slice(1)) {
    for (const key of Object.keys(total) as (keyof EventSourceRunnerStats)[]) total[key] += s[key];
  }
  return total;
}

function sum(invocations: readonly InvocationSummary[], metric: keyof InvocationCounts): number {
  return invocations.reduce((total, i) => total + i[metric], 0);
}

function sumSplits(splits: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const split of splits)
    for (const [key, n] of Object.entries(split)) total[key] = (total[key] ?? 0) + n;
  return total;
}

function percentiles(samples: number[]): { p50: number; p95: number; p99: number } {
  const sorted = samples.sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
}

async function sendRaw(sqs: SQSClient, queueUrl: string, bodies: string[], fifo: boolean): Promise<number> {
  let sent = 0;
  for (let i = 0; i < bodies.length; i += 10) {
    // FIFO: each bad message in a group of its own (it orders nothing), with the dedup id the queue needs.
    const entries = bodies.slice(i, i + 10).map((MessageBody, j) => ({
      Id: String(j),
      MessageBody,
      ...(fifo ? { MessageGroupId: `bad-${randomUUID()}`, MessageDeduplicationId: randomUUID() } : {}),
    }));
    const res = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    sent += res.Successful?.length ?? 0;
  }
  return sent;
}

function printSummary(io: CliIo, s: LocalSummary): void {
  const reasons = Object.entries(s.deadLetteredByReason)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
  const causes = Object.entries(s.redeliveredByCause)
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ');
  const producers = Object.entries(s.producers).map(([name, tenants]) => `${name} (${tenants.join(', ')})`);
  const lines = [
    `queues        ${s.queue}${producers.length === 0 ? '' : `, producers ${producers.join(', ')}`}`,
    `sent          ${s.sent}`,
    ...(producers.length === 0
      ? []
      : [`cross-tenant  ${s.crossTenantRefused} write(s) refused (tenant-not-allowed)`]),
    `written       ${s.written} records (+${s.deletedAsExpected} deleted as expected)`,
    `dead-lettered ${s.deadLettered}${reasons ? ` (${reasons})` : ''}`,
    `lost          ${s.lost}`,
    `duplicated    ${s.duplicated}`,
    `invocations   ${s.invocations} in ${s.containers} containers, ${s.redelivered} records redelivered${causes ? ` (${causes})` : ''}`,
    `S3            ${s.writes} write calls, retries ${s.retries}, S3SlowDowns ${s.s3SlowDowns}, timeouts ${s.timeouts}, pool errors ${s.poolErrors}, booked rate peak ${s.bookedRatePeak} writes/s`,
    `S3 call       p50 ${s.executionMs.p50} ms, p95 ${s.executionMs.p95} ms, p99 ${s.executionMs.p99} ms (sampled attempts, all invocations)`,
    `invocation    p50 ${s.invocationMs.p50} ms, p95 ${s.invocationMs.p95} ms, p99 ${s.invocationMs.p99} ms`,
    `duration      ${s.durationMs} ms`,
    ...s.problems.map((p) => `  ${p}`),
  ];
  io.stdout.write(`${lines.join('\n')}\n`);
}

/** A bar redrawn in place on a TTY; otherwise a line at most every 2 s. */
class Progress {
  readonly #io: CliIo;
  readonly #total: number;
  #lastLine = 0;

  constructor(io: CliIo, total: number) {
    this.#io = io;
    this.#total = Math.max(1, total);
  }

  update(stats: { deleted: number; failedItems: number; invocations: number }): void {
    const ratio = Math.min(1, stats.deleted / this.#total);
    const text = `${stats.deleted}/${this.#total} done, ${stats.failedItems} failed attempts, ${stats.invocations} invocations`;
    if (this.#io.stderr.isTTY) {
      const width = 30;
      const filled = Math.round(ratio * width);
      this.#io.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}`);
    } else if (Date.now() - this.#lastLine >= 2_000) {
      this.#lastLine = Date.now();
      this.#io.stderr.write(`${text}\n`);
    }
  }

  done(stats: { deleted: number; failedItems: number; invocations: number }): void {
    this.#lastLine = 0;
    this.update(stats);
    if (this.#io.stderr.isTTY) this.#io.stderr.write('\n');
  }
}
