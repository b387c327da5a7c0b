// One bench:fleet cell in its own process, on simulated time (bench/throttle/virtual-time.ts): a producer
// feeds the SQS model at the offered rate; the event source mapping model invokes the REAL handler
// (createIngestHandler: plan, tenant pools, the fleet cap, dead letters) in simulated Lambda containers,
// each with its own handler instance and warm state, cold starts included; the handler's ports are the S3
// model (MemoryObjectStore + S3BehaviourModel per prefix), the DynamoDB model behind the client port its
// prefix budgets (the rate schedule's items, docs/fleet-cap.md) use, and an SQS client model for its dead
// letters and its deferred records (copies sent to the ingest queue itself).

import { appendFileSync, writeFileSync, writeSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { MemoryBucket, MemoryObjectStore } from '../../lib/db/memory-object-store.js';
import { loadConfig } from '../../lib/ingest/config.js';
import { createIngestHandler, type IngestHandler } from '../../lib/ingest/handler/ingest-handler.js';
import { dynamoRateBudgets } from '../../lib/ingest/handler/run/prefix-budgets.js';
import { stripeBudgetName, stripeCount } from '../../lib/ingest/handler/run/shard-stripes.js';
import { DEFERRAL_ATTRIBUTES } from '../../lib/ingest/handler/settle/deferral-port.js';
import { createLambdaContext } from '../../lib/local/lambda/sqs-event.js';
import { systemClock } from '../../lib/local/s3-behaviour/clock.js';
import { seededRandom } from '../../lib/local/s3-behaviour/seeded-random.js';
import { Histogram } from '../../lib/pool/histogram.js';
import { reportToParent } from '../support/child.js';
import { VirtualTime } from '../throttle/virtual-time.js';
import { DynamoModelClient, type DynamoStats, DynamoTableModel, lognormal, wait } from './dynamodb-model.js';
import {
  ContainerCpuStore,
  CountingStore,
  PrefixRoutedModel,
  peakMean,
  type S3RequestCounts,
} from './s3-model.js';
import { type PartitionSplit, type ShardPartitionOptions, ShardPartitions } from './s3-partitions.js';
import {
  ACKED,
  chunks,
  DEAD_LETTERED,
  type QueueCounters,
  QueueWithEventSource,
  REDRIVEN,
} from './sqs-model.js';
import { type BudgetTrace, traceBudgets } from './traced-budgets.js';
import { installVirtualAbortTimeout } from './virtual-abort-timeout.js';
import { generateWorkload, messageBody, objectKey, type Skew } from './workload.js';

export interface FleetCellConfig {
  name: string;
  messages: number;
  /** The event source's MaximumConcurrency (invocations at once). */
  concurrency: number;
  tenants: number;
  skew: Skew;
  /** Messages per second the producer sends. */
  offeredPerSecond: number;
  /** When set, the producer also keeps at most this many messages sent but not final (bench:load's backpressure). */
  backlog?: number;
  /** Every message an upsert (bench:load's workload) instead of one in five. @default false */
  allUpserts?: boolean;
  /** `two-hot` skew: each hot tenant's share. */
  hotShare?: number;
  /** Tenant 0 gets `share` of the messages sent between `fromS` and `toS` (simulated seconds). */
  burst?: { fromS: number; toS: number; share: number };
  /** The hot prefix's (tenant 0's) S3 write limit halves at this simulated second. */
  halveAtS?: number;
  batchSize: number;
  batchingWindowMs: number;
  functionTimeoutMs: number;
  /** @default 6 x functionTimeoutMs + batchingWindowMs (the stack's rule) */
  visibilityTimeoutMs?: number;
  memoryMb: number;
  maxReceiveCount: number;
  duplicateRate: number;
  poisonRate: number;
  /** CPU the handler spends per record, which simulated time does not see (added to each invocation). */
  cpuMsPerRecord: number;
  coldStart: { medianMs: number; p99Ms: number };
  s3: {
    writesPerSecond: number;
    latency: { medianMs: number; p99Ms: number };
    internalErrorRate: number;
    /** CPU each S3 call costs its container before it leaves, one call at a time (0: none). @default 0 */
    clientCpuMsPerCall?: number;
    /** That CPU is one for all containers (the local stack's single process), not one per container. @default false */
    clientCpuShared?: boolean;
    /**
     * S3's partitions of the sharded resource's shard prefixes (`RESOURCE_SHARDS` in `env`): how many shards,
     * whether S3 has partitioned them already, how long a partition stays hot before it splits
     * (bench/fleet/s3-partitions.ts). @default none: one token bucket per tenant prefix
     */
    partitions?: { shards: number } & ShardPartitionOptions;
  };
  dynamo: {
    writeUnitsPerSecond: number;
    latency: { medianMs: number; p99Ms: number };
    /** Seconds of uninterrupted throttling before a partition splits for heat (the model's assumption). @default 300 */
    splitForHeatAfterSeconds?: number;
  };
  /** Handler settings (environment). */
  env: Record<string, string>;
  seed: number;
}

/** One simulated second of a cell. */
export interface TimelinePoint {
  s: number;
  /** The hot prefix's accepted S3 writes, and its 503 SlowDown answers, in this second. */
  hotWrites: number;
  hot503s: number;
  /** Messages made final in this second. */
  final: number;
  running: number;
  backlog: number;
  /** The hot prefix's schedule item: its rate (writes/s), and how far ahead of now its slots are booked (ms). */
  hotRate: number;
  hotBookedAheadMs: number;
  /** Records redelivered out of turn so far (cause `permits-unavailable`: no slot before the cutoff, not deferred). */
  permitsUnavailable: number;
}

export interface Quantiles {
  p50: number;
  p99: number;
}

export interface FleetCellResult {
  name: string;
  messages: number;
  simulatedMs: number;
  wallMs: number;
  /** CPU time of the child (user + system), what the simulation costs whatever the machine's load. */
  cpuMs: number;
  acked: number;
  deadLettered: number;
  redriven: number;
  /** Messages not final at the end, plus acknowledged ones whose object is missing. */
  lost: number;
  /**
   * Set when the cell was stopped before every message was final (`kill -TERM <cell pid>`, or
   * `BENCH_FLEET_STOP_AT_S`): the simulated ms it stopped at, and the messages not final then (not `lost`).
   */
  stopped?: { atMs: number; unfinished: number };
  messagesPerSecond: number;
  /** 95% of the messages over the time until 95% were final: the rate without the redelivery tail. */
  messagesPerSecond95: number;
  hotPrefix: { beforeHalving: number; afterHalving?: number; limit: number };
  /** With S3 partitions modelled: the splits S3 made (the model's scale-up), and the hot tenant's partitions at the end. */
  partitions?: { splits: PartitionSplit[]; hotTenantPartitions: number };
  s3: { requests: number; throttled: number; counts: S3RequestCounts };
  dynamo: DynamoStats & { calls: number; attempts: number; retries: number };
  /** The handler's `BookingWaitMs` samples: from a booking to its first slot. */
  bookingWaitMs: Quantiles;
  invocationMs: Quantiles;
  e2eMs: Quantiles;
  invocations: number;
  coldStarts: number;
  timeouts: number;
  lambdaGbSeconds: number;
  logBytes: number;
  sqs: QueueCounters & { requests: number };
  timeline: TimelinePoint[];
  handler: {
    retries: number;
    slowDowns: number;
    deadlineReached: number;
    semaphoreThrottles: number;
    semaphoreErrors: number;
    permitsUnavailable: number;
    rateReportFailures: number;
    /** Records the handler deferred (`RecordsDeferred`): each a copy sent to the queue. */
    deferred: number;
  };
  /** The prefix budgets' bookings, steps and reports, every prefix's and the hot one's. */
  budgets: BudgetTrace;
}

const EPOCH = Date.UTC(2026, 10, 30);
const config = JSON.parse(process.argv[2] ?? '{}') as FleetCellConfig;
const hrStart = process.hrtime.bigint();
const time = new VirtualTime(EPOCH);
time.install();
installVirtualAbortTimeout();
// Every Math.random in the handler (backoff jitter, reservoirs, booking ids) is seeded too.
Math.random = seededRandom(config.seed);
const random = seededRandom(config.seed + 1);

// Logs and EMF lines go to stdout in Lambda (CloudWatch bills their bytes): count them, print nothing.
const realWrite = process.stdout.write.bind(process.stdout);
let logBytes = 0;
const counted = ((chunk: string | Uint8Array) => {
  logBytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
  return true;
}) as typeof process.stdout.write;
process.stdout.write = counted;
process.stderr.write = counted;

const workload = generateWorkload(
  {
    messages: config.messages,
    tenants: config.tenants,
    skew: config.skew,
    poisonRate: config.poisonRate,
    ...(config.hotShare === undefined ? {} : { hotShare: config.hotShare }),
    ...(config.burst === undefined
      ? {}
      : {
          burst: {
            from: Math.floor(config.burst.fromS * config.offeredPerSecond),
            to: Math.floor(config.burst.toS * config.offeredPerSecond),
            share: config.burst.share,
          },
        }),
  },
  random,
);
const bodyOf = (i: number) =>
  messageBody(i, workload.tenantOf[i]!, workload.poison[i] === 1, config.allUpserts === true);
const bodyBytes = (i: number) => bodyOf(i).length;

// S3: the shared behaviour model, tenant 0's prefix with its own (its limit may step); with a sharded
// resource, each model's token buckets are per partition of a tenant's shard prefixes.
const hotPrefix = 't=t-0/';
const partitions =
  config.s3.partitions === undefined
    ? undefined
    : new ShardPartitions(config.s3.partitions.shards, config.s3.partitions);
const s3Model = new PrefixRoutedModel(
  {
    writesPerSecond: config.s3.writesPerSecond,
    latency: config.s3.latency,
    faults: { internalErrorRate: config.s3.internalErrorRate },
    clock: systemClock,
    seed: config.seed + 2,
    ...(partitions === undefined ? {} : { prefixOf: partitions.partitionOf }),
  },
  [hotPrefix],
);
const bucket = new MemoryBucket('fleet');
const store = new CountingStore(new MemoryObjectStore({ bucket, model: s3Model }));
if (config.halveAtS !== undefined) {
  setTimeout(() => s3Model.setHotWriteRate(hotPrefix, config.s3.writesPerSecond / 2), config.halveAtS * 1000);
}

// DynamoDB: one table model, one client port (stateless apart from its counters) shared by the containers.
const table = new DynamoTableModel({
  writeUnitsPerSecond: config.dynamo.writeUnitsPerSecond,
  ...(config.dynamo.splitForHeatAfterSeconds === undefined
    ? {}
    : { splitForHeatAfterSeconds: config.dynamo.splitForHeatAfterSeconds }),
  now: () => Date.now(),
});
const dynamodb = new DynamoModelClient(table, { latency: config.dynamo.latency, random });

let queue: QueueWithEventSource;
const visibilityTimeoutMs =
  config.visibilityTimeoutMs ?? 6 * config.functionTimeoutMs + config.batchingWindowMs;
const messageIndex = (messageId: string) => Number(messageId.slice(2));
const DLQ_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/ingest-dlq';
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:ingest';
/** The ingest queue's URL, as the handler derives it from a record's ARN (`queueUrlOf`). */
const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/ingest';

// SQS as the handler sees it: SendMessageBatch to the DLQ (everything is accepted) or to the ingest queue
// (deferred copies), and the redelivery backoff's GetQueueAttributes (the queue's visibility timeout) and
// ChangeMessageVisibilityBatch.
interface SqsEntry {
  Id?: string;
  MessageBody?: string;
  ReceiptHandle?: string;
  VisibilityTimeout?: number;
  DelaySeconds?: number;
  MessageAttributes?: Record<string, { DataType?: string; StringValue?: string; BinaryValue?: Uint8Array }>;
}
interface SqsCommand {
  readonly constructor: { readonly name: string };
  readonly input: { QueueUrl?: string; Entries?: SqsEntry[] };
}

/** An entry's attributes as Lambda delivers them (`messageAttributes`), and the bytes SQS counts of them. */
function lambdaAttributesOf(entry: SqsEntry): { attributes: SQSMessageAttributes; bytes: number } {
  const attributes: SQSMessageAttributes = {};
  let bytes = 0;
  for (const [name, value] of Object.entries(entry.MessageAttributes ?? {})) {
    const dataType = value.DataType ?? 'String';
    attributes[name] = {
      dataType,
      stringListValues: [],
      binaryListValues: [],
      ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
      ...(value.BinaryValue === undefined
        ? {}
        : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
    };
    bytes +=
      name.length + dataType.length + (value.StringValue?.length ?? 0) + (value.BinaryValue?.length ?? 0);
  }
  return { attributes, bytes };
}

/**
 * The SQS client of one container. A deferral's entry names its record only by its origin
 * (`s3-ingest-origin`), so the container keeps, for the invocation it runs, the deliveries (message index
 * and receive) of each origin in its batch: the copy is charged to one of them, whose message this
 * invocation then acknowledges as deferred, not written.
 */
function sqsClientFor(container: { batch: Map<number, Delivery[]> }) {
  return {
    async send(command: SqsCommand) {
      await wait(lognormalSqs());
      return answer(command, container.batch);
    },
    destroy() {},
  };
}

/** One receive of an SQS message in an invocation's batch. */
interface Delivery {
  index: number;
  receive: number;
}

function answer(command: SqsCommand, batch: Map<number, Delivery[]>) {
  {
    const entries = command.input.Entries ?? [];
    switch (command.constructor.name) {
      case 'GetQueueAttributesCommand':
        queue.counters.visibilityRequests += 1;
        return { Attributes: { VisibilityTimeout: String(Math.floor(visibilityTimeoutMs / 1000)) } };
      case 'ChangeMessageVisibilityBatchCommand': {
        queue.counters.visibilityRequests += 1;
        const failed = entries.filter(
          (e) => !queue.changeVisibility(e.ReceiptHandle ?? '', e.VisibilityTimeout ?? 0),
        );
        return {
          Successful: entries.filter((e) => !failed.includes(e)).map((e) => ({ Id: e.Id })),
          Failed: failed.map((e) => ({ Id: e.Id, Code: 'ReceiptHandleIsInvalid', SenderFault: true })),
        };
      }
      case 'SendMessageBatchCommand': {
        if (command.input.QueueUrl === QUEUE_URL) {
          let bytes = 0;
          for (const entry of entries) {
            const { attributes, bytes: attributeBytes } = lambdaAttributesOf(entry);
            bytes += (entry.MessageBody?.length ?? 0) + attributeBytes;
            const origin = messageIndex(attributes[DEFERRAL_ATTRIBUTES.origin]?.stringValue ?? '');
            const delivery = batch.get(origin)?.shift();
            if (delivery === undefined)
              throw new Error(`SQS model: a deferral of m-${origin}, not in the batch`);
            queue.defer(delivery.index, entry.DelaySeconds ?? 0, attributes, delivery.receive);
          }
          queue.counters.deferralSendRequests += chunks(entries.length, bytes);
          return {
            Successful: entries.map((e) => ({ Id: e.Id, MessageId: `copy-${e.Id}`, MD5OfMessageBody: '' })),
            Failed: [],
          };
        }
        if (command.input.QueueUrl !== DLQ_URL) {
          throw new Error(`SQS model: SendMessageBatch to ${command.input.QueueUrl} is not modelled`);
        }
        const bytes = entries.reduce((s, e) => s + (e.MessageBody?.length ?? 0) + 200, 0);
        queue.counters.dlqSendRequests += chunks(1, bytes);
        for (const entry of entries) {
          const source = entry.MessageAttributes?.sourceMessageId?.StringValue;
          if (source !== undefined) queue.deadLettered.add(messageIndex(source));
        }
        return {
          Successful: entries.map((e) => ({ Id: e.Id, MessageId: `dlq-${e.Id}`, MD5OfMessageBody: '' })),
          Failed: [],
        };
      }
      default:
        throw new Error(`SQS model: ${command.constructor.name} is not modelled`);
    }
  }
}
const lognormalSqs = lognormal(8, 30, random);

const ingestConfig = loadConfig({
  BUCKET_NAME: 'fleet-bucket',
  DLQ_URL,
  SEMAPHORE_TABLE: 'semaphores',
  RESOURCES: JSON.stringify({ items: {} }),
  AWS_REGION: 'us-east-1',
  S3_PREFIX_WRITE_RATE: String(config.s3.writesPerSecond),
  ...config.env,
});

// The fleet cap: each prefix's schedule item in the table model, every booking, step and report traced.
// BENCH_FLEET_TRACE=<file>: one JSON line per invocation and per hot-prefix booking, step and report.
const traceFile = process.env.BENCH_FLEET_TRACE;
if (traceFile !== undefined) writeFileSync(traceFile, '');
const traceLine = (line: object) => {
  if (traceFile !== undefined)
    appendFileSync(traceFile, `${JSON.stringify({ at: Date.now() - EPOCH, ...line })}\n`);
};
// The hot tenant's budgets: its prefix's, and its stripes when its resource is sharded.
const hotBudgetNames = [
  `prefix:fleet-bucket/${hotPrefix}`,
  ...Array.from({ length: stripeCount(ingestConfig) }, (_, k) =>
    stripeBudgetName('fleet-bucket', 't-0', k, stripeCount(ingestConfig)),
  ),
];
const budgets = traceBudgets(
  dynamoRateBudgets(ingestConfig, dynamodb as never, ingestConfig.semaphoreTable!),
  (name) => hotBudgetNames.includes(name),
  traceLine,
);

const handlerStats = {
  retries: 0,
  slowDowns: 0,
  deadlineReached: 0,
  semaphoreThrottles: 0,
  semaphoreErrors: 0,
  permitsUnavailable: 0,
  rateReportFailures: 0,
  deferred: 0,
};
const bookingWait = new Histogram();
const invocationMs = new Histogram();

interface Container {
  handler: IngestHandler;
  /** The deliveries of the invocation it runs, by origin message (see `sqsClientFor`). */
  batch: Map<number, Delivery[]>;
}
const idle: Container[] = [];
let coldStarts = 0;
let invocations = 0;
let timeouts = 0;
let gbSeconds = 0;
const coldStartMs = lognormal(config.coldStart.medianMs, config.coldStart.p99Ms, random);
const gb = config.memoryMb / 1024;

// One CPU for every container (the local stack runs them all in one process), when configured so.
const cpuStore =
  config.s3.clientCpuShared === true && (config.s3.clientCpuMsPerCall ?? 0) > 0
    ? new ContainerCpuStore(store, config.s3.clientCpuMsPerCall!, (ms) => wait(ms))
    : undefined;

function coldStart(): Container {
  coldStarts += 1;
  const container = { batch: new Map<number, Delivery[]>() } as Container;
  // The default handler: its deferral port is SqsDeferrals over this client (the queue model keeps copies).
  container.handler = createIngestHandler(ingestConfig, {
    clients: {
      s3: { destroy() {} } as never,
      sqs: sqsClientFor(container) as never,
      dynamodb: dynamodb as never,
    },
    budgets: budgets.factory,
    store:
      cpuStore ??
      ((config.s3.clientCpuMsPerCall ?? 0) > 0
        ? new ContainerCpuStore(store, config.s3.clientCpuMsPerCall!, (ms) => wait(ms))
        : store),
    logger: new Logger({ serviceName: 'ingest' }),
    metrics: new Metrics({ namespace: 'S3Ingest', serviceName: 'ingest' }),
    onInvocation: (summary) => {
      handlerStats.retries += summary.Retries;
      handlerStats.slowDowns += summary.S3SlowDowns;
      handlerStats.semaphoreThrottles += summary.SemaphoreThrottles;
      handlerStats.semaphoreErrors += summary.SemaphoreErrors;
      handlerStats.rateReportFailures += summary.rateReportFailures;
      handlerStats.deferred += summary.RecordsDeferred;
      handlerStats.permitsUnavailable += summary.splits.RecordsRedelivered['permits-unavailable'] ?? 0;
      if (summary.deadlineReached) handlerStats.deadlineReached += 1;
      for (const ms of summary.samples.BookingWaitMs) bookingWait.record(ms);
      if (traceFile !== undefined) {
        const { samples, splits, ...counts } = summary;
        traceLine({
          invocation: counts,
          redelivered: splits.RecordsRedelivered,
          bookingWaitMs: samples.BookingWaitMs,
        });
      }
    },
  });
  return container;
}

async function invoke(
  records: SQSRecord[],
  indices: readonly number[],
  receives: readonly number[],
): Promise<Set<number>> {
  invocations += 1;
  let container = idle.pop();
  let initMs = 0;
  if (container === undefined) {
    container = coldStart();
    initMs = coldStartMs();
    await wait(initMs);
  }
  container.batch = new Map();
  for (const [i, index] of indices.entries()) {
    const origin = queue.originOf(index);
    const delivery = { index, receive: receives[i]! };
    const deliveries = container.batch.get(origin);
    if (deliveries === undefined) container.batch.set(origin, [delivery]);
    else deliveries.push(delivery);
  }
  const startedAt = Date.now();
  const deadline = startedAt + config.functionTimeoutMs;
  const context = createLambdaContext({
    functionName: 'ingest',
    memoryLimitInMB: config.memoryMb,
    region: 'us-east-1',
    deadline,
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), config.functionTimeoutMs);
  });
  try {
    // The CPU the handler spends is not simulated time: charge it up front, inside the invocation.
    await wait(config.cpuMsPerRecord * records.length);
    const answer = await Promise.race([container.handler({ Records: records }, context), timedOut]);
    if (answer === 'timeout') {
      // Lambda kills a timed-out environment: this container is not reused (its handler is abandoned).
      timeouts += 1;
      container = undefined;
      throw new Error('Task timed out');
    }
    return new Set(answer.batchItemFailures.map((f) => messageIndex(f.itemIdentifier)));
  } finally {
    clearTimeout(timer);
    const durationMs = Date.now() - startedAt;
    invocationMs.record(durationMs);
    // Billed per ms; the INIT phase is billed too (on-demand functions, since 2025-08-01).
    gbSeconds += ((Math.ceil(durationMs) + Math.ceil(initMs)) * gb) / 1000;
    if (container !== undefined) idle.push(container);
  }
}

function makeRecord(
  index: number,
  receive: number,
  sentAt: number,
  origin: number,
  attributes: SQSMessageAttributes | undefined,
): SQSRecord {
  return {
    messageId: `m-${index}`,
    receiptHandle: `${index}.${receive}`,
    body: bodyOf(origin),
    attributes: {
      ApproximateReceiveCount: String(receive),
      SentTimestamp: String(Math.floor(sentAt)),
      SenderId: 'AIDAFLEET',
      ApproximateFirstReceiveTimestamp: String(Math.floor(sentAt)),
    },
    messageAttributes: attributes ?? {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: QUEUE_ARN,
    awsRegion: 'us-east-1',
  };
}

queue = new QueueWithEventSource(
  config.messages,
  {
    batchSize: config.batchSize,
    batchingWindowMs: config.batchingWindowMs,
    maximumConcurrency: config.concurrency,
    visibilityTimeoutMs,
    maxReceiveCount: config.maxReceiveCount,
    duplicateRate: config.duplicateRate,
  },
  random,
  makeRecord,
  (records, indices, receives) => invoke(records, indices, receives),
  bodyBytes,
);

// The producer: every 10 ms, the messages the offered rate has accrued.
const TICK_MS = 10;
let owed = 0;
function produce(): void {
  owed += (config.offeredPerSecond * TICK_MS) / 1000;
  let n = Math.floor(owed);
  owed -= n;
  if (config.backlog !== undefined) {
    const room = config.backlog - (queue.sent - queue.settled);
    n = Math.max(0, Math.min(n, room));
  }
  if (n > 0) queue.send(n);
  if (queue.sent < config.messages) setTimeout(produce, TICK_MS);
}
produce();

// Once a simulated second: the hot prefix's schedule item (its rate, how far ahead its slots are booked),
// for the cell's timeline.
const timeline: TimelinePoint[] = [];
let lastFinal = 0;
function sample(): void {
  let rate = 0;
  let bookedAheadMs = 0;
  // Summed over the hot tenant's budgets (its stripes' rates add up; how far ahead, the sum over them).
  for (const name of hotBudgetNames) {
    for (const item of table.itemsOf(`rate#${name}`)) {
      rate += Number(item.rate?.N ?? 0);
      bookedAheadMs += Math.max(0, Number(item.freeAt?.N ?? 0) - Date.now());
    }
  }
  if (partitions !== undefined) {
    const writeLimit = config.s3.writesPerSecond;
    partitions.tick(s3Model.shared.stats().byPrefix, writeLimit, Date.now() - EPOCH);
    for (const { model } of s3Model.hot.values())
      partitions.tick(model.stats().byPrefix, writeLimit, Date.now() - EPOCH);
  }
  const second = timeline.length;
  const hotModel = s3Model.hot.get(hotPrefix)!;
  timeline.push({
    s: second,
    hotWrites: hotModel.accepted.counts[second] ?? 0,
    hot503s: hotModel.throttled.counts[second] ?? 0,
    final: queue.settled - lastFinal,
    running: queue.running,
    backlog: queue.backlog,
    hotRate: Math.round(rate * 10) / 10,
    hotBookedAheadMs: Math.round(bookedAheadMs * 10) / 10,
    permitsUnavailable: handlerStats.permitsUnavailable,
  });
  lastFinal = queue.settled;
  if (!done) setTimeout(sample, 1000);
}
let done = false;
setTimeout(sample, 1000);
void queue.whenSettled().then(() => {
  done = true;
});
// `kill -USR2 <pid>`: how far the cell is, on stderr (written past the counted streams: it is not a log
// line of the simulated fleet). A cell stopped for lack of time can then say where it got.
process.on('SIGUSR2', () => {
  writeSync(
    2,
    `${config.name}: ${(time.now / 1000).toFixed(1)} simulated s, ${queue.sent} sent, ${queue.settled} final, ${queue.running} invocations running, backlog ${queue.backlog}, ${invocations} invocations so far\n`,
  );
});
// BENCH_FLEET_PROFILE=<from s>,<to s>,<file>: a CPU profile (V8's sampler, 1 ms) of the simulated seconds
// from..to only, written to <file> (.cpuprofile, for DevTools or any profile viewer): what one phase of a
// cell costs (the deferral churn of a concurrency-1,000 Zipf cell's tail), without its first seconds.
// BENCH_FLEET_STOP_AT_S: stop at this simulated second; the messages not final by then count as lost.
const profileWindow = process.env.BENCH_FLEET_PROFILE?.split(',');
if (profileWindow !== undefined) {
  const [fromS, toS, file] = profileWindow;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 1000 });
  setTimeout(() => void session.post('Profiler.start'), Number(fromS) * 1000);
  setTimeout(() => {
    void session.post('Profiler.stop').then(({ profile }) => writeFileSync(file!, JSON.stringify(profile)));
  }, Number(toS) * 1000);
}
const LIMIT_MS = Number(process.env.BENCH_FLEET_STOP_AT_S ?? 6 * 3600) * 1000;
// `kill -TERM <cell pid>`: stop at the current simulated instant and report what was simulated so far (a
// cell that does not fit the time left still gives its first seconds, marked `stopped`).
let stopRequested = false;
process.on('SIGTERM', () => {
  stopRequested = true;
});
await time.run(() => done || stopRequested || time.now > LIMIT_MS);
const simulatedMs = time.now;
// Stopped on request: the messages not final are unfinished, not lost (a run that ends with nothing left
// to simulate, or at the 6 h limit, still counts them lost).
const stoppedEarly = !done && (stopRequested || process.env.BENCH_FLEET_STOP_AT_S !== undefined);

// What happened to every message, and whether every acknowledged write is in the bucket.
let acked = 0;
let deadLettered = 0;
let redriven = 0;
let lost = 0;
let unfinished = 0;
const e2e = new Float64Array(config.messages);
let e2eCount = 0;
for (let i = 0; i < config.messages; i++) {
  const fate = queue.state[i];
  if (fate === ACKED) {
    acked += 1;
    e2e[e2eCount++] = queue.ackedAt[i]! - queue.sentAt[i]!;
    if (!bucket.objects.has(objectKey(i, workload.tenantOf[i]!, ingestConfig.resourceShards?.items ?? 1)))
      lost += 1;
  } else if (fate === DEAD_LETTERED) deadLettered += 1;
  else if (fate === REDRIVEN) redriven += 1;
  else if (!stoppedEarly) lost += 1;
  else unfinished += 1;
}
const sorted = e2e.subarray(0, e2eCount).sort();
const finalAt = new Float64Array(config.messages);
let finals = 0;
for (let i = 0; i < config.messages; i++)
  if (queue.state[i] !== 0) finalAt[finals++] = queue.ackedAt[i]! - EPOCH;
const settled95Ms =
  finalAt.subarray(0, finals).sort()[Math.max(0, Math.ceil(0.95 * config.messages) - 1)] ?? simulatedMs;
const q = (a: Float64Array, p: number) =>
  a.length === 0 ? 0 : a[Math.min(a.length - 1, Math.floor(p * a.length))]!;

const hot = s3Model.hot.get(hotPrefix)!.accepted;
const halveAt = config.halveAtS;
const before = halveAt === undefined ? hot.counts : hot.counts.slice(0, halveAt);
const after = halveAt === undefined ? undefined : hot.counts.slice(halveAt);
const peak = (counts: readonly number[]) => peakMean(counts, 10);
const s3Totals = s3Model.totals();
const sqsRequests =
  queue.counters.sendRequests +
  queue.counters.receiveRequests +
  queue.counters.deleteRequests +
  queue.counters.dlqSendRequests +
  queue.counters.deferralSendRequests +
  queue.counters.visibilityRequests;
const result: FleetCellResult = {
  name: config.name,
  messages: config.messages,
  simulatedMs,
  wallMs: Number(process.hrtime.bigint() - hrStart) / 1e6,
  cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  acked,
  deadLettered,
  redriven,
  lost,
  ...(stoppedEarly ? { stopped: { atMs: simulatedMs, unfinished } } : {}),
  messagesPerSecond: (acked + deadLettered + redriven) / (simulatedMs / 1000),
  messagesPerSecond95: (0.95 * config.messages) / (settled95Ms / 1000),
  hotPrefix: {
    beforeHalving: peak(before),
    ...(after === undefined ? {} : { afterHalving: peak(after) }),
    limit: config.s3.writesPerSecond,
  },
  ...(partitions === undefined
    ? {}
    : { partitions: { splits: partitions.splits, hotTenantPartitions: partitions.partitions(hotPrefix) } }),
  s3: { requests: s3Totals.requests, throttled: s3Totals.throttled, counts: store.counts },
  dynamo: { ...table.report(), ...dynamodb.counters },
  bookingWaitMs: { p50: bookingWait.quantile(0.5), p99: bookingWait.quantile(0.99) },
  invocationMs: { p50: invocationMs.quantile(0.5), p99: invocationMs.quantile(0.99) },
  e2eMs: { p50: q(sorted, 0.5), p99: q(sorted, 0.99) },
  invocations,
  coldStarts,
  timeouts,
  lambdaGbSeconds: gbSeconds,
  logBytes,
  sqs: { ...queue.counters, requests: sqsRequests },
  handler: handlerStats,
  budgets: budgets.trace,
  timeline,
};
process.stdout.write = realWrite;
reportToParent(result);
process.exit(0);
