import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { countQueue, queueDepth } from '../../../lib/cli/inspect.js';
import { Producer } from '../../../lib/ingest/producer.js';
import { DEMO_RESOURCES, type DemoLoad, generateDemoLoad } from '../../../lib/local/demo/demo-load.js';
import { type DemoVerification, verifyDemo } from '../../../lib/local/demo/demo-verify.js';
import {
  clientConfigFor,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  startLocalAws,
} from '../../../lib/local/emulators/local-aws.js';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import {
  type InvocationLine,
  type PipelineLogLine,
  readEventLog,
} from '../../../lib/local/pipeline-process/event-log.js';
import { type PipelineProcess, spawnPipelineProcess } from '../../../lib/local/pipeline-process/spawn.js';
import { startChaosProxy } from '../../../lib/local/s3-behaviour/chaos-proxy.js';
import { accountRates, type RateAccount, WriteLoggingModel, watchLoop } from './rate-accounting.js';

/** The issue's fault mix, as shares of all S3 requests (SlowDown) and of the requests it lets through. */
export const CHAOS_FAULTS = {
  slowDownRate: 0.1,
  internalErrorRate: 0.01,
  resetRate: 0.01,
  stallRate: 0.01,
  /** A stall outlasts the per-attempt timeout by far: only the pool's abort ends it. */
  stallMs: 20_000,
} as const;

/**
 * Handler settings: a short per-attempt timeout (stalls are aborted after 1 s), the deadline margin at least
 * that, and a prefix ceiling of 300 writes/s whose schedule the concurrent invocations (three containers of
 * 16 slots) share.
 */
export const CHAOS_HANDLER_ENV = {
  POOL_CONCURRENCY: '16',
  S3_PREFIX_WRITE_RATE: '300',
  WRITE_TIMEOUT_MS: '1000',
  DEADLINE_MARGIN_MS: '1500',
  WRITE_RETRIES: '3',
} as const;

export interface ChaosRunOptions {
  /** Messages in total (2 % of them permanently bad). */
  messages: number;
  /** SIGKILLs of the pipeline process, spread evenly over the run (each followed by a fresh process). */
  kills: number;
  tenants?: number;
  seed?: number;
  /** Where logs go (one NDJSON event log and one output file per process). */
  workDir: string;
  /** Gives up when the run takes longer. Default 120 s. */
  timeoutMs?: number;
  /** Progress lines. */
  progress?: (line: string) => void;
}

export interface KillRecord {
  pid: number;
  /** Messages acknowledged (deleted from the queue) before the kill, over every process. */
  processedBefore: number;
  /** Its bookings open (booked, not yet reported), and their rates summed (writes/s). */
  bookingsOpen: number;
  rateBooked: number;
  /** Epoch ms of the SIGKILL. */
  at: number;
}

/** The read-back verification (written, dead-lettered, lost, duplicated, problems) plus the run's evidence. */
export interface ChaosReport extends DemoVerification {
  /** The bookings, the rate invariant, what killed holders left. */
  rate: RateAccount;
  sent: number;
  /** Deliveries of a message after its first (kills, transient failures), seen in logged invocations. */
  redelivered: number;
  invocations: number;
  failedInvocations: number;
  processes: number;
  kills: KillRecord[];
  /**
   * Per container: most S3 requests in flight at once (cap `POOL_CONCURRENCY`), and most on one prefix beyond
   * its bound (a booked prefix: its holder's pool; an unbooked one: `SMALL_TENANTS.writes - 1`).
   */
  inFlight: {
    cap: number;
    peak: number;
    peakOverBound: number;
    /** Each invocation that went over a prefix's bound: where, and by how much. */
    overBound: string[];
  };
  pool: { retries: number; throttles: number; timeouts: number };
  chaos: {
    requests: number;
    slowDowns: number;
    internalErrors: number;
    resets: number;
    stalls: number;
  };
  durationMs: number;
}

async function sendRaw(sqs: SQSClient, queueUrl: string, bodies: string[]): Promise<number> {
  let sent = 0;
  for (let i = 0; i < bodies.length; i += 10) {
    const Entries = bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(j), MessageBody }));
    const res = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries }));
    sent += res.Successful?.length ?? 0;
  }
  return sent;
}

/** Bookings a process has open right now according to its log (booked, not yet reported). */
function openBookings(lines: readonly PipelineLogLine[], pid: number): { bookings: number; rate: number } {
  const open = new Map<string, number>();
  for (const l of lines) {
    if (l.pid !== pid) continue;
    if (l.event === 'rate-book') open.set(l.fence, l.rate);
    else if (l.event === 'rate-report') open.delete(l.fence);
  }
  return { bookings: open.size, rate: [...open.values()].reduce((a, r) => a + r, 0) };
}

/**
 * The whole local pipeline under faults: embedded SQS/S3/DynamoDB in this process, the chaos proxy in front
 * of S3, and the event-source runner with the real handler in a child process that is SIGKILLed `kills`
 * times mid-invocation (while it has bookings open) and replaced by a fresh one each time. The seeded
 * demo load is sent in rounds (one write per record per round, the next round once the queue is empty);
 * afterwards the bucket and the DLQ are read back and compared with the load's expected final state.
 */
export async function runChaosPipeline(options: ChaosRunOptions): Promise<ChaosReport> {
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 120_000;
  const giveUpAt = started + timeoutMs;
  const progress = options.progress ?? (() => {});
  mkdirSync(options.workDir, { recursive: true });

  const load: DemoLoad = generateDemoLoad({
    messages: options.messages,
    tenants: options.tenants ?? 3,
    seed: options.seed ?? 1,
    badRatio: 0.02,
  });
  const aws = await startLocalAws();
  const loop = watchLoop();
  const model = new WriteLoggingModel({
    writesPerSecond: Number.POSITIVE_INFINITY,
    readsPerSecond: Number.POSITIVE_INFINITY,
    faults: {
      slowDownRate: CHAOS_FAULTS.slowDownRate,
      internalErrorRate: CHAOS_FAULTS.internalErrorRate,
      resetRate: CHAOS_FAULTS.resetRate,
      stallRate: CHAOS_FAULTS.stallRate,
      stallMs: CHAOS_FAULTS.stallMs,
    },
    seed: options.seed ?? 1,
  });
  const proxy = await startChaosProxy({ target: aws.emulatorEndpoints.s3, model });
  const admin = clientConfigFor(aws.emulatorEndpoints);
  const sqs = new SQSClient(admin.sqs);
  const s3 = new S3Client(admin.s3);
  const dynamodb = new DynamoDBClient(admin.dynamodb);
  const processes: PipelineProcess[] = [];
  try {
    // Provisioned on the emulators directly: the chaos is for the pipeline, not for the setup.
    const resources = await provisionLocal({
      clientConfig: admin,
      maxReceiveCount: 10,
      visibilityTimeoutSeconds: 5,
    });
    const env: Record<string, string> = {
      ...CHAOS_HANDLER_ENV,
      BUCKET_NAME: resources.bucket,
      DLQ_URL: resources.dlqUrl,
      SEMAPHORE_TABLE: resources.tableName,
      RESOURCES: JSON.stringify(DEMO_RESOURCES),
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_S3: proxy.endpoint,
      AWS_ENDPOINT_URL_SQS: aws.endpoints.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: aws.endpoints.dynamodb,
    };
    const start = async (): Promise<PipelineProcess> => {
      const n = processes.length;
      const child = spawnPipelineProcess({
        queueUrl: resources.queueUrl,
        logFile: join(options.workDir, `pipeline-${n}.ndjson`),
        outputFile: join(options.workDir, `pipeline-${n}.out`),
        batchSize: 25,
        batchingWindowMs: 100,
        concurrency: 3,
        functionTimeoutMs: 5_000,
        visibilityTimeoutSeconds: 5,
        waitTimeSeconds: 1,
        env,
      });
      processes.push(child);
      await child.ready(Math.max(1_000, giveUpAt - Date.now()));
      progress(`process ${n} (pid ${child.pid}) ready`);
      return child;
    };
    const allLines = (): PipelineLogLine[] => processes.flatMap((p) => readEventLog(p.logFile));
    const processed = (lines: readonly PipelineLogLine[]) =>
      lines.reduce((sum, l) => sum + (l.event === 'invocation' ? l.deleted : 0), 0);

    const killAt = Array.from({ length: options.kills }, (_, k) =>
      Math.floor(((k + 1) * load.messages) / (options.kills + 1)),
    );
    const kills: KillRecord[] = [];
    let current = await start();
    const producer = new Producer({ queueUrl: resources.queueUrl, client: sqs, resources: DEMO_RESOURCES });
    let sent = 0;
    for (const [r, round] of load.rounds.entries()) {
      const results = await producer.sendMany(round.writes);
      sent += results.filter((x) => x.error === undefined).length;
      sent += await sendRaw(
        sqs,
        resources.queueUrl,
        round.bad.map((b) => b.body),
      );
      progress(`round ${r}: ${round.writes.length + round.bad.length} sent`);
      // Standard queues do not order across batches: the next round goes out once this one is fully done.
      for (;;) {
        const next = killAt[kills.length];
        if (next !== undefined) {
          const lines = allLines();
          const open = openBookings(lines, current.pid);
          // Kill mid-invocation, with bookings open: the hardest moment for the schedules and the queue.
          if (processed(lines) >= next && open.bookings > 0) {
            await current.kill();
            kills.push({
              at: Date.now(),
              pid: current.pid,
              processedBefore: processed(lines),
              bookingsOpen: open.bookings,
              rateBooked: open.rate,
            });
            progress(
              `killed pid ${current.pid} after ${processed(lines)} processed, with ${open.bookings} bookings open (${open.rate} writes/s)`,
            );
            current = await start();
            continue;
          }
        }
        if (queueDepth(await countQueue(sqs, resources.queueUrl)) === 0) break;
        if (Date.now() > giveUpAt) throw new Error(`chaos run timed out in round ${r}`);
        await delay(100);
      }
    }
    const exit = await current.stop();
    if (exit !== 0) throw new Error(`last pipeline process exited with ${exit}`);

    const verification = await verifyDemo({
      s3,
      sqs,
      bucket: resources.bucket,
      dlqUrl: resources.dlqUrl,
      load,
    });
    const lines = allLines();
    const invocations = lines.filter((l): l is InvocationLine => l.event === 'invocation');
    const counters = model.stats().total;
    const rate = await accountRates({
      lines,
      writes: model.writes,
      bucket: resources.bucket,
      dynamodb,
      tableName: resources.tableName,
      parentStalls: loop.stop(),
      killedAt: new Map(kills.map((k) => [k.pid, k.at])),
    });
    return {
      rate,
      sent,
      ...verification,
      redelivered: invocations.reduce((sum, l) => sum + l.redelivered, 0),
      invocations: invocations.length,
      failedInvocations: invocations.filter((l) => l.outcome === 'failed').length,
      processes: processes.length,
      kills,
      inFlight: {
        cap: Number(CHAOS_HANDLER_ENV.POOL_CONCURRENCY),
        peak: Math.max(0, ...invocations.map((l) => l.peakInFlight)),
        peakOverBound: Math.max(Number.NEGATIVE_INFINITY, ...invocations.map((l) => l.peakOverBound)),
        overBound: invocations
          .filter((l) => l.peakOverBound > 0)
          .map((l) => `container ${l.container}: +${l.peakOverBound} on ${l.peakOverBoundAt}`),
      },
      pool: {
        retries: invocations.reduce((sum, l) => sum + l.retries, 0),
        throttles: invocations.reduce((sum, l) => sum + l.throttles, 0),
        timeouts: invocations.reduce((sum, l) => sum + l.timeouts, 0),
      },
      chaos: {
        requests: counters.requests,
        slowDowns: counters.throttled,
        internalErrors: counters.internalErrors,
        resets: counters.resets,
        stalls: counters.stalls,
      },
      durationMs: Date.now() - started,
    };
  } finally {
    await Promise.all(processes.map((p) => p.kill()));
    sqs.destroy();
    s3.destroy();
    dynamodb.destroy();
    await proxy.stop();
    await aws.stop();
    loop.stop();
  }
}

/** The accounting report as printed by the suites. */
export function formatChaosReport(r: ChaosReport): string {
  const pct = (n: number) => `${((100 * n) / Math.max(1, r.chaos.requests)).toFixed(1)} %`;
  const reasons = Object.entries(r.deadLetteredByReason)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
  return [
    `sent            ${r.sent}`,
    `written         ${r.written} records (+${r.deletedAsExpected} deleted as expected)`,
    `dead-lettered   ${r.deadLettered}${reasons ? ` (${reasons})` : ''}`,
    `accounted       sent ${r.sent} = records' writes + dead-lettered; lost ${r.lost}, duplicated ${r.duplicated}`,
    `redelivered     ${r.redelivered} deliveries after the first, ${r.invocations} invocations (${r.failedInvocations} failed whole)`,
    `kills           ${r.kills.length}: ${r.kills.map((k) => `pid ${k.pid} after ${k.processedBefore} processed with ${k.bookingsOpen} bookings open (${k.rateBooked.toFixed(1)} writes/s)`).join('; ')}; ${r.processes} processes`,
    ...rateLines(r.rate),
    `in flight       peak ${r.inFlight.peak} per container (cap ${r.inFlight.cap}); peak over a prefix's bound ${r.inFlight.peakOverBound}${r.inFlight.overBound.length > 0 ? ` (${r.inFlight.overBound.join('; ')})` : ''}`,
    `pool            retries ${r.pool.retries}, throttles ${r.pool.throttles}, timeouts ${r.pool.timeouts}`,
    `S3 faults       ${r.chaos.requests} requests: SlowDown ${r.chaos.slowDowns} (${pct(r.chaos.slowDowns)}), 500 ${r.chaos.internalErrors} (${pct(r.chaos.internalErrors)}), resets ${r.chaos.resets} (${pct(r.chaos.resets)}), stalls ${r.chaos.stalls} (${pct(r.chaos.stalls)})`,
    `duration        ${r.durationMs} ms`,
    ...r.problems.map((p) => `  ${p}`),
  ].join('\n');
}

function rateLines(rate: RateAccount): string[] {
  const peaks = Object.entries(rate.windowPeaks)
    .map(([prefix, peak]) => `${prefix} ${peak}`)
    .join(', ');
  return [
    `rate bookings   ${rate.bookings} (${rate.slots} slots, lowest rate ${rate.lowestRate} writes/s, ${rate.decreasesFollowed} decreases followed, ${rate.raisesTaken} raised rates taken at a first slot); open at the kills ${rate.orphaned} (${rate.orphanedRate.toFixed(1)} writes/s); next slot after the run ${rate.nextSlotBooked ? 'booked' : 'NOT booked'} at most ${rate.nextSlotLateMs} ms after the call`,
    `rate invariant  ${rate.violations.length} violations; most accepted writes in 250 ms: ${peaks}; unbooked writes ${rate.unbookedWrites} (small tenants), ${rate.largeUnbookedWrites} (large; ${rate.largeLateSends} sent late within a stall); skew ${rate.skewMs} ms`,
    ...rate.violations.slice(0, 10).map((v) => `  ${v}`),
  ];
}
