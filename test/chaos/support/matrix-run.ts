// One fault-matrix cell: the real handler (createIngestHandler, its own SDK clients) behind a fault proxy
// per service, a batch (and, where the call needs one, a scenario) that makes the cell's call happen, the
// fault on that call, and redelivery of what the handler did not acknowledge, with the copies it deferred
// to the run's queue, until nothing is left. After every invocation the invariants are checked against
// what really landed in the emulators (read past the proxies); after the run, the rate invariant against
// the bookings the handler logged.

import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { isHiddenJson } from '../../../lib/db/sequenced-state.js';
import { type IngestConfig, loadConfig } from '../../../lib/ingest/config.js';
import { type AwsClients, createAwsClients } from '../../../lib/ingest/handler/aws-clients.js';
import { createIngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { dynamoRateBudgets } from '../../../lib/ingest/handler/run/prefix-budgets.js';
import { originOf } from '../../../lib/ingest/handler/settle/deferral-port.js';
import { type LocalAws, startLocalAws } from '../../../lib/local/emulators/local-aws.js';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import type { AwsService } from '../../../lib/local/faults/aws-call.js';
import { type FaultProxy, type FaultRule, startFaultProxy } from '../../../lib/local/faults/fault-proxy.js';
import {
  EventLog,
  readEventLog,
  type UnbookedWriteLine,
} from '../../../lib/local/pipeline-process/event-log.js';
import {
  ContainerBookings,
  loggedBudgets,
  watchBookedWrites,
} from '../../../lib/local/pipeline-process/logged-budgets.js';
import { MIN_BUDGET_SHARE } from '../../../lib/semaphore/tuning.js';
import { lambdaContext, quietMetrics, silentLogger } from '../../unit/ingest/handler/support.js';
import { bookingsByName, bookingsNotInSchedule, sampleScheduleItem } from './budget-history.js';
import {
  contentKey,
  MATRIX_RESOURCE,
  MATRIX_TENANT,
  type MatrixBatch,
  matrixBatch,
  stateAfter,
} from './matrix-batch.js';
import { cellName, type FaultSchedule, type MatrixCell } from './matrix-cells.js';
import { collectCopies } from './matrix-copies.js';
import { stageScenario } from './matrix-scenario.js';
import {
  acceptedWrites,
  peakWindowCount,
  RATE_WINDOW_MS,
  rateViolations,
  writesOutsideBookings,
} from './rate-check.js';

/**
 * What the proxy's stamp of a write may add to the longest event-loop stall of the invocation (the pool,
 * the SDK and the proxy share this process's loop): the loopback hop and the SDK's middleware.
 */
const TRANSIT_MS = 25;

/**
 * Handler settings of every cell: a 5 s invocation with a 2 s margin (cutoff at 3 s; dead letters until
 * 4 s), S3 attempts of 1 s retried twice, 4 slots, and a prefix ceiling of 20 writes/s, so the schedule
 * binds (a batch's 24 writes take over a second at it, a quarter of a second unpaced) and a holder that did
 * not pace would break the rate invariant. The margins are wide because this machine is shared (load 20+
 * on 2 cores): with a 1 s margin and 300 ms attempts, starved timers alone made invocations overrun and
 * healthy writes time out.
 */
export const MATRIX_HANDLER_ENV = {
  POOL_CONCURRENCY: '4',
  S3_PREFIX_WRITE_RATE: '20',
  WRITE_TIMEOUT_MS: '1000',
  WRITE_RETRIES: '2',
  DEADLINE_MARGIN_MS: '2000',
} as const;
export const MATRIX_BUDGET_MS = 5_000;

export interface MatrixStack {
  readonly aws: LocalAws;
  readonly proxies: Readonly<Record<AwsService, FaultProxy>>;
  /** Clients straight to the emulators, to see what landed. */
  readonly direct: { readonly s3: S3Client; readonly sqs: SQSClient; readonly dynamodb: DynamoDBClient };
  stop(): Promise<void>;
}

/** The emulators of this test process, a fault proxy in front of each service, and direct clients. */
export async function startMatrixStack(): Promise<MatrixStack> {
  const aws = await startLocalAws();
  const e = aws.emulatorEndpoints;
  const [s3, dynamodb, sqs] = await Promise.all([
    startFaultProxy({ service: 's3', target: e.s3 }),
    startFaultProxy({ service: 'dynamodb', target: e.dynamodb }),
    startFaultProxy({ service: 'sqs', target: e.sqs }),
  ]);
  const direct = {
    s3: new S3Client(aws.clientConfig.s3),
    sqs: new SQSClient(aws.clientConfig.sqs),
    dynamodb: new DynamoDBClient(aws.clientConfig.dynamodb),
  };
  // The handler's clients take credentials from the environment, as in Lambda.
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  process.env.AWS_ACCESS_KEY_ID = 'test';
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
  return {
    aws,
    proxies: { s3, dynamodb, sqs },
    direct,
    stop: async () => {
      for (const client of Object.values(direct)) client.destroy();
      await Promise.all([s3.stop(), dynamodb.stop(), sqs.stop()]);
      await aws.stop();
      restoreEnv('AWS_ACCESS_KEY_ID', saved.id);
      restoreEnv('AWS_SECRET_ACCESS_KEY', saved.secret);
    },
  };
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

export interface CellOptions {
  readonly seed: number;
  readonly schedule: FaultSchedule;
  /** Records (two writes each) in the batch; at least 5, and at least the call's `minRecords`. */
  readonly records: number;
  /** Bad messages (dead-lettered with a reason). */
  readonly bad: number;
  /** Invocations before giving up on settling every message. @default 8 */
  readonly maxRounds?: number;
}

/** What a run observed of the tenant prefix's schedule. */
export interface RateFigures {
  /** Bookings the handler made (logged), the slots they booked, and the decreases their holders followed. */
  readonly bookings: number;
  readonly slots: number;
  readonly decreasesFollowed: number;
  /** Lowest rate of the schedule seen (table, polled; it starts at `S3_PREFIX_WRITE_RATE`). */
  readonly lowestRate: number;
  /** Most writes S3 accepted on the prefix in any window of `RATE_WINDOW_MS`. */
  readonly windowPeak: number;
  /** The skew the rate invariant allowed (longest event-loop stall + transit), ms. */
  readonly skewMs: number;
}

/** What one cell run observed: the figures of the README's matrix, and every invariant broken. */
export interface CellResult {
  readonly cell: string;
  /** The tenant prefix's schedule: bookings, slots, decreases, the rate invariant's figures. */
  readonly rate: RateFigures;
  readonly call: string;
  readonly fault: string;
  readonly schedule: FaultSchedule;
  readonly seed: number;
  readonly messages: number;
  /** Faults the proxy injected into the cell's call over all invocations. */
  readonly injected: number;
  /**
   * Outcome of the first invocation: deliveries written, dead-lettered, deferred (acknowledged with a copy
   * in the queue) and redelivered.
   */
  readonly firstRound: { written: number; deadLettered: number; deferred: number; redelivered: number };
  /** Deferred copies the handler left in the queue over all invocations. */
  readonly copies: number;
  /** Invocations until every message was acknowledged (redeliveries included). */
  readonly invocations: number;
  readonly slowestInvocationMs: number;
  readonly budgetMs: number;
  /**
   * Longest event-loop stall seen during an invocation (ms): on a shared machine the handler's own timers
   * cannot fire during one, so an overrun is read against it.
   */
  readonly loopStallMaxMs: number;
  /** Most S3 requests to the tenant's prefix in flight at once (at the proxy). */
  readonly s3InFlightPeak: number;
  /** Most copies of one dead letter in the DLQ (SQS is at least once). */
  readonly letterCopiesMax: number;
  readonly violations: readonly string[];
}

function rulesFor(
  cell: MatrixCell,
  schedule: FaultSchedule,
  round: number,
  injectedSoFar: number,
): FaultRule[] | undefined {
  const rule: FaultRule = {
    name: cellName(cell),
    match: cell.call.match,
    fault: cell.fault,
    ...(cell.delayMs === undefined ? {} : { delayMs: cell.delayMs }),
  };
  switch (schedule) {
    case 'first-round':
      // Until the end of the first invocation that met the fault (one cut short before making the call
      // does not count), then none.
      if (round === 1) return [rule];
      return injectedSoFar > 0 ? [] : undefined;
    case 'once':
      // Set once: the first matching call of the run, whichever invocation makes it.
      return round === 1 ? [{ ...rule, times: 1 }] : undefined;
    case 'flaky':
      return round === 1 ? [{ ...rule, probability: 0.5 }] : round === 4 ? [] : undefined;
  }
}

/**
 * Polls the run's table while an invocation runs: every schedule item's invariant (its rate within
 * `[ceiling x MIN_BUDGET_SHARE, ceiling]`, its version never going back), and the tenant prefix's lowest rate.
 */
class ScheduleMonitor {
  /** The tenant prefix's schedule: its lowest rate seen. */
  lowestRate = Number.POSITIVE_INFINITY;
  /** Per schedule item, the version seen last (it never goes back). */
  readonly #versions = new Map<string, number>();
  readonly violations: string[] = [];
  #running: Promise<void> | undefined;
  #stop = false;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    /** A budget's ceiling (`S3_PREFIX_WRITE_RATE`). */
    private readonly rateCeiling: number,
  ) {}

  start(): void {
    this.#stop = false;
    this.#running = this.#loop();
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#running;
    await this.sample();
  }

  async #loop(): Promise<void> {
    while (!this.#stop) {
      await this.sample();
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
  }

  async sample(): Promise<void> {
    const out = await this.client.send(new ScanCommand({ TableName: this.table, ConsistentRead: true }));
    for (const item of out.Items ?? []) {
      const pk = item.pk?.S ?? '';
      if (item.sk?.S !== 'schedule') {
        this.violations.push(`${pk} ${item.sk?.S ?? ''}: an item that is no schedule in the table`);
        continue;
      }
      const sample = sampleScheduleItem(
        item,
        this.rateCeiling,
        MIN_BUDGET_SHARE,
        this.#versions.get(pk) ?? 0,
      );
      this.violations.push(...sample.violations);
      this.#versions.set(pk, sample.version);
      if (pk.includes(`/t=${MATRIX_TENANT}/`)) this.lowestRate = Math.min(this.lowestRate, sample.rate);
    }
  }
}

async function readRecord(
  s3: S3Client,
  bucket: string,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  try {
    const out = await s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: `t=${MATRIX_TENANT}/r=${MATRIX_RESOURCE}/id=${id}.json` }),
    );
    const stored = JSON.parse(await out.Body!.transformToString()) as Record<string, unknown>;
    // A tombstone or a pending partial (issue 15) is an absent record.
    return isHiddenJson(stored) ? undefined : stored;
  } catch (err) {
    if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
    throw err;
  }
}

/**
 * Takes every letter out of the DLQ: origin message id (`sourceMessageId`, or the origin of the deferred
 * copy it names, `originById`) -> reasons of its copies.
 */
async function drainLetters(
  sqs: SQSClient,
  dlqUrl: string,
  originById: ReadonlyMap<string, string>,
  into: Map<string, string[]>,
): Promise<void> {
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 60,
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) return;
    for (const m of messages) {
      const named = m.MessageAttributes?.sourceMessageId?.StringValue ?? `(none: ${m.MessageId})`;
      const source = originById.get(named) ?? named;
      into.set(source, [...(into.get(source) ?? []), m.MessageAttributes?.reason?.StringValue ?? '']);
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
}

/** Invariants after an invocation, given every message acknowledged so far. */
async function checkInvariants(
  stack: MatrixStack,
  bucket: string,
  batch: MatrixBatch,
  acked: ReadonlySet<string>,
  letters: ReadonlyMap<string, string[]>,
  round: number,
): Promise<string[]> {
  const violations: string[] = [];
  for (const [record, chain] of batch.chains) {
    const ackedFlags = chain.map((w) => acked.has(w.message.messageId));
    const prefix = ackedFlags.indexOf(false) === -1 ? chain.length : ackedFlags.indexOf(false);
    if (ackedFlags.slice(prefix).some(Boolean))
      violations.push(`round ${round}: ${record} acknowledged a write after an unacknowledged earlier one`);
    // What S3 holds must be the acknowledged prefix's result, or a later state of the same chain (a write
    // applied whose answer was lost); never an earlier one (a reverted acknowledged write).
    const allowed = new Set<string>();
    for (let m = prefix; m <= chain.length; m++) allowed.add(contentKey(stateAfter(chain, m)));
    const stored = contentKey(await readRecord(stack.direct.s3, bucket, record));
    if (!allowed.has(stored))
      violations.push(
        `round ${round}: ${record} holds ${stored}; ${prefix} acknowledged writes allow only ${[...allowed].join(' | ')}`,
      );
    for (const w of chain)
      if (letters.has(w.message.messageId))
        violations.push(`round ${round}: good write ${record}#${w.index} (${w.op}) was dead-lettered`);
  }
  for (const [id, reason] of batch.bad) {
    if (!acked.has(id)) continue;
    const copies = letters.get(id);
    if (copies === undefined)
      violations.push(`round ${round}: bad message ${id} acknowledged but not in the DLQ`);
    else if (!copies.every((r) => r === reason))
      violations.push(
        `round ${round}: bad message ${id} dead-lettered as ${copies.join(',')}, expected ${reason}`,
      );
  }
  return violations;
}

/** Runs one cell with one schedule and seed; never throws on a broken invariant, lists it instead. */
export async function runCell(
  stack: MatrixStack,
  cell: MatrixCell,
  options: CellOptions,
): Promise<CellResult> {
  const name = `m${options.seed}-${Math.random().toString(36).slice(2, 8)}`;
  const scenario = cell.call.scenario ?? 'plain';
  const r = await provisionLocal({
    endpoints: stack.aws.emulatorEndpoints,
    bucket: name,
    queueName: `${name}-q`,
    tableName: `${name}-sem`,
  });
  const config = loadConfig({
    BUCKET_NAME: r.bucket,
    DLQ_URL: r.dlqUrl,
    SEMAPHORE_TABLE: r.tableName,
    RESOURCES: JSON.stringify({ [MATRIX_RESOURCE]: {} }),
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: stack.proxies.s3.endpoint,
    AWS_ENDPOINT_URL_SQS: stack.proxies.sqs.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: stack.proxies.dynamodb.endpoint,
    ...MATRIX_HANDLER_ENV,
  });
  const { Attributes } = await stack.direct.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: r.queueUrl, AttributeNames: ['QueueArn'] }),
  );
  // The records come from the run's own queue, so the handler's deferred copies land where the runner
  // picks them up (and its visibility changes name a real queue).
  const queueArn = Attributes?.QueueArn ?? '';
  const clients = createAwsClients(config);
  // The handler's own budgets, logged as in the pipeline process: its bookings.
  const bookingLog = logBookings(config, clients, r.tableName, name);
  const handler = createIngestHandler(config, {
    clients,
    logger: silentLogger(),
    metrics: quietMetrics(),
    budgets: bookingLog.budgets,
  });
  const proxy = stack.proxies[cell.call.service];
  const records = Math.max(options.records, cell.call.minRecords ?? 0);
  const batch = matrixBatch({ records, bad: options.bad, seed: options.seed });
  const monitor = new ScheduleMonitor(stack.direct.dynamodb, r.tableName, config.s3PrefixWriteRate);
  /** Origin ids (the batch's message ids) acknowledged as written or dead-lettered, not deferred. */
  const acked = new Set<string>();
  const letters = new Map<string, string[]>();
  /** Deferred copy's message id -> the batch message it stands for. */
  const originById = new Map<string, string>();
  /** Deliveries so far per message id (`ApproximateReceiveCount`). */
  const deliveries = new Map<string, number>();
  const violations: string[] = [];
  const maxRounds = options.maxRounds ?? 8;
  let pending: SQSRecord[] = batch.messages.map((m) => ({ ...m, eventSourceARN: queueArn }));
  let firstRound = { written: 0, deadLettered: 0, deferred: 0, redelivered: 0 };
  let copies = 0;
  let slowest = 0;
  let loopStallMax = 0;
  let invocations = 0;
  const injectedBefore = proxy.injected()[cellName(cell)] ?? 0;
  const injectedSoFar = () => (proxy.injected()[cellName(cell)] ?? 0) - injectedBefore;
  stack.proxies.s3.resetPeaks();
  const stage = await stageScenario({
    scenario,
    schedule: options.schedule,
    config,
    tableName: r.tableName,
    s3Proxy: stack.proxies.s3,
    dynamodb: stack.direct.dynamodb,
  });
  try {
    for (let round = 1; round <= maxRounds && pending.length > 0; round++) {
      await stage.beforeInvocation(round, injectedSoFar());
      const rules = rulesFor(cell, options.schedule, round, injectedSoFar());
      if (rules !== undefined) proxy.setRules(rules);
      const event: SQSEvent = {
        Records: pending.map((m) => {
          const receives = (deliveries.get(m.messageId) ?? 0) + 1;
          deliveries.set(m.messageId, receives);
          return { ...m, attributes: { ...m.attributes, ApproximateReceiveCount: String(receives) } };
        }),
      };
      monitor.start();
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      const startedAt = Date.now();
      const response = await handler(event, lambdaContext(MATRIX_BUDGET_MS));
      bookingLog.bookings.endInvocation();
      const elapsedMs = Date.now() - startedAt;
      loop.disable();
      const stallMs = Math.round(loop.max / 1e6);
      loopStallMax = Math.max(loopStallMax, stallMs);
      await monitor.stop();
      invocations += 1;
      slowest = Math.max(slowest, elapsedMs);
      if (elapsedMs >= MATRIX_BUDGET_MS)
        violations.push(
          `round ${round}: returned after ${elapsedMs} ms of a ${MATRIX_BUDGET_MS} ms budget (longest event-loop stall ${stallMs} ms)`,
        );
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      for (const id of failed)
        if (!pending.some((m) => m.messageId === id))
          violations.push(`round ${round}: unknown failure id ${id}`);
      // What the handler deferred: a copy in the queue stands for its origin, and acknowledges no write.
      const newCopies = await collectCopies(stack.direct.sqs, r.queueUrl, queueArn);
      copies += newCopies.length;
      const deferredOrigins = new Set<string>();
      for (const copy of newCopies) {
        const origin = originOf(copy);
        if (!batch.writeOf.has(origin) && !batch.bad.has(origin))
          violations.push(
            `round ${round}: a copy in the queue (${copy.messageId}) names no message of the batch`,
          );
        originById.set(copy.messageId, origin);
        deferredOrigins.add(origin);
      }
      const settled = pending.filter((m) => !failed.has(m.messageId));
      const deferred = settled.filter((m) => deferredOrigins.has(originOf(m)));
      const final = settled.filter((m) => !deferredOrigins.has(originOf(m)));
      for (const m of final) acked.add(originOf(m));
      if (round === 1)
        firstRound = {
          written: final.filter((m) => batch.writeOf.has(m.messageId)).length,
          deadLettered: final.filter((m) => batch.bad.has(m.messageId)).length,
          deferred: deferred.length,
          redelivered: failed.size,
        };
      await drainLetters(stack.direct.sqs, r.dlqUrl, originById, letters);
      violations.push(...(await checkInvariants(stack, r.bucket, batch, acked, letters, round)));
      pending = [...pending.filter((m) => failed.has(m.messageId)), ...newCopies];
    }
    if (pending.length > 0)
      violations.push(`${pending.length} messages still unacknowledged after ${maxRounds} invocations`);
  } finally {
    proxy.setRules([]);
    await stage.close();
    await handler.close();
    for (const client of Object.values(clients)) client.destroy();
    bookingLog.log.close();
  }
  // The schedules as the run left them.
  await monitor.sample();
  const injected = injectedSoFar();
  violations.push(...monitor.violations);
  const s3InFlightPeak = stack.proxies.s3.peakInFlight()[`t=${MATRIX_TENANT}/`] ?? 0;
  const rate = checkRate(
    stack,
    r.bucket,
    r.tableName,
    readEventLog(bookingLog.path),
    monitor,
    loopStallMax,
    violations,
  );
  rmSync(bookingLog.path, { force: true });
  // The in-flight bound that remains: the tenant books, so at most its holder's pool.
  const inFlightBound = Number(MATRIX_HANDLER_ENV.POOL_CONCURRENCY);
  if (s3InFlightPeak > inFlightBound)
    violations.push(
      `${s3InFlightPeak} S3 requests in flight on the tenant's prefix > bound ${inFlightBound}`,
    );
  return {
    cell: cellName(cell),
    rate,
    call: cell.call.name,
    fault: cell.fault,
    schedule: options.schedule,
    seed: options.seed,
    messages: batch.messages.length,
    injected,
    firstRound,
    copies,
    invocations,
    slowestInvocationMs: slowest,
    budgetMs: MATRIX_BUDGET_MS,
    loopStallMaxMs: loopStallMax,
    s3InFlightPeak,
    letterCopiesMax: Math.max(0, ...[...letters.values()].map((c) => c.length)),
    violations,
  };
}

/**
 * The handler's prefix budgets (`dynamoRateBudgets`, as in Lambda) wrapped as the pipeline process wraps
 * them: every booking, followed decrease and report logged to a file of the run, and every S3 write counted
 * under its booking or logged as started outside one.
 */
function logBookings(config: IngestConfig, clients: AwsClients, tableName: string, run: string) {
  const path = join(tmpdir(), `s3-ingest-matrix-${run}.ndjson`);
  const log = new EventLog(path);
  const bookings = new ContainerBookings(log, 0);
  watchBookedWrites(clients.s3, bookings);
  const budgets = loggedBudgets(dynamoRateBudgets(config, clients.dynamodb, tableName), bookings);
  return { path, log, bookings, budgets };
}

/**
 * The rate invariant of a run (`rateViolations`): the writes the S3 proxy let through
 * to the tenant's prefix against the bookings the handler logged (each of them one the schedule holds: a
 * write DynamoDB applied, at the DynamoDB proxy). The tenant is large (its batch has more than
 * `SMALL_TENANTS.writes` writes): none of its writes starts outside a booking.
 */
function checkRate(
  stack: MatrixStack,
  bucket: string,
  tableName: string,
  lines: ReturnType<typeof readEventLog>,
  monitor: ScheduleMonitor,
  loopStallMaxMs: number,
  violations: string[],
): RateFigures {
  const prefix = `t=${MATRIX_TENANT}/`;
  const name = `prefix:${bucket}/${prefix}`;
  const endedAt = Date.now();
  const bookings = bookingsByName(lines, () => endedAt).get(name) ?? [];
  const writes = acceptedWrites(stack.proxies.s3.calls(), bucket, prefix);
  const skewMs = loopStallMaxMs + TRANSIT_MS;
  for (const b of bookingsNotInSchedule(stack.proxies.dynamodb.calls(), tableName, name, bookings))
    violations.push(
      `booking ${b.fence} (${b.writes} slots to ${b.endsAt}) is not in the schedule DynamoDB holds`,
    );
  const outside = writesOutsideBookings(writes, bookings, skewMs);
  if (outside.length > 0)
    violations.push(
      `${outside.length} writes accepted on ${prefix} outside every booking (first at ${outside[0]})`,
    );
  // A write sent outside its booking's slots by no more than the loop's stalls was started in its slot and
  // sent late; one with no booking open, or further out, is a violation.
  for (const l of lines.filter((l): l is UnbookedWriteLine => l.event === 'unbooked-write'))
    if (l.outsideMs === undefined || l.outsideMs > skewMs)
      violations.push(
        `a write on ${l.name} started outside a booking at ${l.t} (large tenant: ${l.large}; ` +
          `${l.outsideMs === undefined ? 'none open' : `by ${l.outsideMs} ms, skew ${skewMs} ms`})`,
      );
  violations.push(...rateViolations(prefix, writes, bookings, { skewMs, windowMs: RATE_WINDOW_MS }));
  return {
    bookings: bookings.length,
    slots: bookings.reduce((sum, b) => sum + b.writes, 0),
    decreasesFollowed: bookings.reduce((sum, b) => sum + b.decreases.length, 0),
    lowestRate: Number.isFinite(monitor.lowestRate) ? monitor.lowestRate : 0,
    windowPeak: peakWindowCount(writes),
    skewMs,
  };
}
