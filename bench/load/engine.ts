// One engine's end-to-end load run, in its own process (bench/load.ts starts one per engine): its own local
// stack (fauxqs SQS + S3, dynalite, the S3 chaos proxy), the producer feeding the queue, the event-source
// runner invoking the engine's handler in Lambda-like containers, then a check of what landed in the bucket.

import { appendFileSync, writeFileSync } from 'node:fs';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { paginateListObjectsV2, S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createS3Client } from '../../lib/db/s3-client.js';
import { loadConfig } from '../../lib/ingest/config.js';
import { createAwsClients } from '../../lib/ingest/handler/aws-clients.js';
import { createIngestHandler } from '../../lib/ingest/handler/ingest-handler.js';
import { stripeBudgetName } from '../../lib/ingest/handler/run/shard-stripes.js';
import { type DeferralPort, originSentOf } from '../../lib/ingest/handler/settle/deferral-port.js';
import { SqsDeferrals } from '../../lib/ingest/handler/settle/deferral-queue.js';
import type { ProducerWrite } from '../../lib/ingest/message/types.js';
import { Producer } from '../../lib/ingest/producer.js';
import {
  clientConfigFor,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  startLocalAws,
} from '../../lib/local/emulators/local-aws.js';
import { provisionLocal } from '../../lib/local/emulators/provision.js';
import { EventSourceRunner } from '../../lib/local/lambda/event-source-runner.js';
import { type ContainerHandler, LambdaContainers } from '../../lib/local/lambda/lambda-containers.js';
import { SilentMetrics } from '../../lib/local/lambda/silent-metrics.js';
import type { S3ModelCounters } from '../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { Histogram } from '../../lib/pool/histogram.js';
import { budgetKey, parseBudgetItem } from '../../lib/semaphore/budget-item.js';
import { ShardPartitions } from '../fleet/s3-partitions.js';
import { reportToParent } from '../support/child.js';
import { InFlightCounter } from './in-flight.js';
import { createNaiveHandler } from './naive-handler.js';

/**
 * `rate`: createIngestHandler as shipped (each prefix's fleet cap a schedule of write slots at a rate,
 * docs/fleet-cap.md; deferred records, redelivery backoff); `naive`: Promise.all over the batch, SDK
 * retries only.
 */
export type LoadEngine = 'rate' | 'naive';

export interface LoadRunConfig {
  engine: LoadEngine;
  messages: number;
  tenants: number;
  /**
   * Share of all messages (0..1) that goes to each of the two hot tenants (tenant-00, tenant-01); the rest
   * spread evenly over the other tenants. Skew is what makes a per-prefix limit bite at the rates this
   * machine reaches (an even spread over 50 prefixes stays far under any per-prefix limit).
   */
  hotShare: number;
  /** How many hot tenants (1 or 2) get `hotShare` each. Default 2. */
  hotTenants?: number;
  /** Halve the proxy's per-prefix limit once this share (0..1) of the messages has been acknowledged. */
  halveAt?: number;
  /** No per-prefix limit at the proxy, and the real handler's rate at S3's 3,500/s: the pipeline's ceiling. */
  unlimited?: boolean;
  /** The chaos proxy's accepted writes per second per tenant prefix (and the real handler's S3_PREFIX_WRITE_RATE). */
  writesPerSecond: number;
  latency: { medianMs: number; p99Ms: number };
  /** Records per invocation. */
  batchSize: number;
  /** Invocations at once (the event source's MaximumConcurrency). */
  invocations: number;
  /** The producer keeps at most this many messages sent but not yet acknowledged. */
  backlog: number;
  /** POOL_CONCURRENCY of the real handler. */
  poolConcurrency: number;
  functionTimeoutMs: number;
  maxReceiveCount: number;
  /**
   * Shards of the `items` resource (RESOURCE_SHARDS), every tenant's: > 1 spreads each tenant's records
   * over that many shard prefixes, each limited apart at the proxy (S3 after it partitioned them). Default 1.
   */
  shards?: number;
  /** The proxy's token bucket in seconds of its rate (`S3BehaviourOptions.burstSeconds`). Default 0.1. */
  burstSeconds?: number;
}

/** One 1 s sample of the run. */
export interface LoadSample {
  /** Seconds since the first message was sent. */
  t: number;
  /** Messages acknowledged (deleted from the queue) so far. */
  acked: number;
  /** S3 HTTP attempts in flight at the sample instant. */
  s3InFlight: number;
  /** Invocations running at the sample instant. */
  invocations: number;
  /** 503 SlowDown answers of the chaos proxy so far. */
  throttled: number;
  /** S3 requests the proxy saw so far. */
  s3Requests: number;
  /**
   * The hot tenant's prefix (tenant-00) at the proxy so far, **writes only** (the limit is on writes):
   * write requests, accepted, 503s; `reads` its read requests (never limited here, counted apart).
   */
  hot: { requests: number; ok: number; throttled: number; reads: number };
  /** The proxy's per-prefix write limit at the sample instant (writes/s). */
  limit: number;
  /**
   * The hot tenant's schedule as last read (once a second; absent before the first read): its prefix's
   * item, or the sum of its stripes' rates when sharded.
   */
  hotSchedule?: HotSchedule;
  /** DynamoDB writes (PutItem/UpdateItem/DeleteItem, failed conditional ones included) so far. */
  dynamoWrites: number;
  /** S3 PutObject/DeleteObject attempts so far. */
  s3Writes: number;
}

export interface LoadRunResult {
  engine: LoadEngine;
  messages: number;
  durationMs: number;
  unlimited: boolean;
  /** Seconds since the start when the proxy's limit was halved (undefined: not halved). */
  halvedAt?: number;
  dynamoWrites: number;
  s3Writes: number;
  /** The hot prefix's schedule item at the end, when it has one (the handler booked its slots). */
  hotSchedule?: HotSchedule;
  /** Shards of every tenant's resource (1: unsharded). */
  shards: number;
  /** The hot tenant's write counters per limited prefix at the end (one entry, or one per shard). */
  hotPrefixes: Record<string, { ok: number; throttled: number }>;
  e2e: { p50: number; p99: number; max: number; count: number };
  /** Records the handler deferred (re-sent to the queue as delayed copies, then acknowledged). */
  deferred?: number;
  /** `e2e` of the other tenants' records only (not the hot tenant's): what a hot tenant costs its neighbours. */
  e2eCold: { p50: number; p99: number; max: number; count: number };
  throttled: number;
  s3Requests: number;
  s3Attempts: number;
  s3InFlightPeak: number;
  invocations: number;
  redelivered: number;
  failedItems: number;
  invocationErrors: number;
  written: number;
  deadLettered: number;
  lost: number;
  containers: number;
  /** Real handler only (its invocation summaries): pool retries, SlowDowns the pools saw, invocations that hit the deadline margin. */
  pool?: { retries: number; throttles: number; timeouts: number; deadlineReached: number };
  samples: LoadSample[];
}

const RESOURCES = { items: {} };
const VISIBILITY_SLACK_S = 2;

function tenantOf(config: LoadRunConfig, i: number): string {
  const hot = config.hotTenants ?? 2;
  const slot = (i % 1000) / 1000;
  const hotIndex = Math.floor(slot / config.hotShare);
  const index = hotIndex < hot ? hotIndex : hot + (i % Math.max(1, config.tenants - hot));
  return `tenant-${String(index).padStart(2, '0')}`;
}

const HOT_TENANT = 'tenant-00';
const HOT_PREFIX = `t=${HOT_TENANT}/`;

/** Whether an SQS body (contract v1, written by the Producer) is a write of the hot tenant. */
function isHotRecord(body: string): boolean {
  try {
    return (JSON.parse(body) as { tenant?: unknown }).tenant === HOT_TENANT;
  } catch {
    return false;
  }
}
const DYNAMO_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

/** Counts the DynamoDB writes a client sends (attempts, failed conditional writes included). */
function countDynamoWrites(client: DynamoDBClient, onWrite: () => void): DynamoDBClient {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (DYNAMO_WRITES.has(context.commandName ?? '')) onWrite();
      return next(args);
    },
    { step: 'deserialize', name: 'benchDynamoWriteCounter' },
  );
  return client;
}

/** Whether a limited prefix at the proxy is the hot tenant's (`t=tenant-00/`, or one of its shards `t=tenant-00/s=0003`). */
function isHotPrefix(prefix: string): boolean {
  return prefix.includes(HOT_PREFIX);
}

/** The hot tenant's counters at the proxy, summed over its prefixes (its key may carry the bucket in front). */
function hotCounters(byPrefix: Record<string, S3ModelCounters>): LoadSample['hot'] {
  // Writes only: the proxy limits writes per prefix, and counting the prefix's reads (the GET of every
  // conditional write that has no cached state) made "accepted writes/s" up to a quarter too high.
  const sum = { requests: 0, ok: 0, throttled: 0, reads: 0 };
  for (const [prefix, c] of Object.entries(byPrefix)) {
    if (!isHotPrefix(prefix)) continue;
    sum.requests += c.writes.requests;
    sum.ok += c.writes.ok;
    sum.throttled += c.writes.throttled;
    sum.reads += c.requests - c.writes.requests;
  }
  return sum;
}

function writesFor(config: LoadRunConfig, from: number, to: number, sentAt: number): ProducerWrite[] {
  const writes: ProducerWrite[] = [];
  for (let i = from; i < to; i++) {
    // Every message writes its own record, so the bucket must end with exactly `messages` objects.
    writes.push({
      tenant: tenantOf(config, i),
      resource: 'items',
      op: 'upsert',
      id: `item-${i}`,
      data: { n: i, sentAt, payload: 'x'.repeat(200) },
    });
  }
  return writes;
}

/** A prefix's schedule item as read: its rate, and how far ahead of the read its slots are booked. */
export interface HotSchedule {
  /** Writes per second the fleet may start against the prefix. */
  rate: number;
  /** Milliseconds from the read to the first free slot (0: every slot from now on is free). */
  bookedAheadMs: number;
}

/**
 * The schedule of budgets `names` (one prefix, or a sharded tenant's stripes): their rates summed, the
 * furthest booked ahead; `undefined` while none exists (no holder booked slots yet).
 */
async function scheduleState(
  client: DynamoDBClient,
  tableName: string,
  names: readonly string[],
): Promise<HotSchedule | undefined> {
  let found: HotSchedule | undefined;
  for (const name of names) {
    const { Item } = await client.send(
      new GetItemCommand({ TableName: tableName, Key: budgetKey(name), ConsistentRead: true }),
    );
    const schedule = parseBudgetItem(Item);
    if (schedule === undefined) continue;
    found = {
      rate: Math.round(((found?.rate ?? 0) + schedule.rate) * 100) / 100,
      bookedAheadMs: Math.max(found?.bookedAheadMs ?? 0, Math.round(schedule.freeAt - Date.now())),
    };
  }
  return found;
}

async function countObjects(s3: S3Client, bucket: string): Promise<number> {
  let count = 0;
  for await (const page of paginateListObjectsV2({ client: s3 }, { Bucket: bucket })) {
    count += page.KeyCount ?? page.Contents?.length ?? 0;
  }
  return count;
}

async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages ?? 0);
}

async function runLoad(config: LoadRunConfig): Promise<LoadRunResult> {
  const shards = config.shards ?? 1;
  // Sharded: each shard prefix is limited apart, the steady state after S3 partitioned them (the fleet
  // simulator models the scale-up before it, bench/fleet/s3-partitions.ts).
  const partitions =
    shards > 1 ? new ShardPartitions(shards, { prePartitioned: true, splitAfterSeconds: 0 }) : undefined;
  const aws = await startLocalAws({
    chaos: {
      writesPerSecond: config.unlimited === true ? Number.POSITIVE_INFINITY : config.writesPerSecond,
      latency: config.latency,
      seed: 1,
      ...(config.burstSeconds === undefined ? {} : { burstSeconds: config.burstSeconds }),
      ...(partitions === undefined ? {} : { prefixOf: partitions.partitionOf }),
    },
  });
  let dynamoWrites = 0;
  const model = aws.chaos!.model;
  // BENCH_LOAD_HOTLOG=<file>: every request the hot prefix's model decided (ms since start, kind, outcome),
  // one JSON line each, to see the gaps between holders; written when the run ends.
  const hotLog = process.env.BENCH_LOAD_HOTLOG;
  const hotRequests: string[] = [];
  if (hotLog !== undefined) {
    const decide = model.decide.bind(model);
    const t0 = performance.now();
    model.decide = (kind, key) => {
      const decision = decide(kind, key);
      if (key.startsWith(HOT_PREFIX))
        hotRequests.push(`[${Math.round(performance.now() - t0)},"${kind}","${decision.outcome}"]`);
      return decision;
    };
  }
  const admin = clientConfigFor(aws.emulatorEndpoints);
  const sqs = new SQSClient(admin.sqs);
  const s3Direct = new S3Client(admin.s3);
  const inFlight = new InFlightCounter();
  const e2e = new Histogram();
  const deferredIds = new Set<string>();
  const watchDeferrals = (port: DeferralPort): DeferralPort => ({
    defer: async (deferrals, options) => {
      const refused = await port.defer(deferrals, options);
      for (const d of deferrals) if (!refused.has(d.record.messageId)) deferredIds.add(d.record.messageId);
      return refused;
    },
  });
  const e2eCold = new Histogram();
  const pool = { retries: 0, throttles: 0, timeouts: 0, deadlineReached: 0 };
  try {
    const visibility = Math.ceil(config.functionTimeoutMs / 1000) + VISIBILITY_SLACK_S;
    const resources = await provisionLocal({
      clientConfig: admin,
      maxReceiveCount: config.maxReceiveCount,
      visibilityTimeoutSeconds: visibility,
    });
    // The handler's SDK clients resolve credentials from the process (the emulators accept any).
    process.env.AWS_ACCESS_KEY_ID ??= LOCAL_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY ??= LOCAL_CREDENTIALS.secretAccessKey;
    process.env.AWS_REGION ??= LOCAL_REGION;
    const ingestConfig = loadConfig({
      BUCKET_NAME: resources.bucket,
      DLQ_URL: resources.dlqUrl,
      SEMAPHORE_TABLE: resources.tableName,
      RESOURCES: JSON.stringify(RESOURCES),
      ...(shards > 1 ? { RESOURCE_SHARDS: JSON.stringify({ items: shards }) } : {}),
      AWS_REGION: LOCAL_REGION,
      AWS_ENDPOINT_URL_S3: aws.endpoints.s3,
      AWS_ENDPOINT_URL_SQS: aws.endpoints.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: aws.endpoints.dynamodb,
      POOL_CONCURRENCY: String(config.poolConcurrency),
      S3_PREFIX_WRITE_RATE: String(config.unlimited === true ? 3500 : config.writesPerSecond),
      DEADLINE_MARGIN_MS: '2000',
      WRITE_TIMEOUT_MS: '2000',
    });

    // One handler per container, as in Lambda; each container gets its own S3 client, counted in flight.
    const trace = process.env.BENCH_LOAD_TRACE;
    const coldStart = (): ContainerHandler => {
      if (config.engine === 'naive') {
        const s3 = inFlight.attach(new S3Client({ ...aws.clientConfig.s3 }));
        const naive = createNaiveHandler({ s3, bucket: resources.bucket, resources: RESOURCES });
        return Object.assign((event: SQSEvent) => naive(event), { close: naive.close });
      }
      const s3 = inFlight.attach(
        createS3Client({
          endpoint: aws.endpoints.s3,
          region: LOCAL_REGION,
          credentials: { ...LOCAL_CREDENTIALS },
          forcePathStyle: true,
          maxSockets: config.poolConcurrency,
        }),
      );
      const dynamodb = countDynamoWrites(createAwsClients(ingestConfig).dynamodb, () => {
        dynamoWrites += 1;
      });
      const handlerSqs = createAwsClients(ingestConfig).sqs;
      // The handler as shipped: its prefix budgets are its default (the schedule items in SEMAPHORE_TABLE).
      return createIngestHandler(ingestConfig, {
        clients: { s3, dynamodb },
        // Deferred records go back to the queue through the real port; the run watches which were deferred
        // (acknowledged but not yet written: their e2e is measured when a copy is written).
        deferrals: watchDeferrals(new SqsDeferrals(handlerSqs)),
        logger: new Logger({ serviceName: 'bench-load', logLevel: 'ERROR' }),
        // Published (dropped) after every invocation, so samples never pile up into a mid-run flush.
        metrics: new SilentMetrics({ namespace: 'bench-load', serviceName: 'bench-load' }),
        onInvocation: (summary) => {
          pool.retries += summary.Retries;
          pool.throttles += summary.S3SlowDowns;
          pool.timeouts += summary.Timeouts;
          if (summary.deadlineReached) pool.deadlineReached += 1;
          // BENCH_LOAD_TRACE=<file>: one JSON line per invocation (what it did, its booking waits), to see
          // where a run's time went.
          if (trace !== undefined) {
            const { samples, ...rest } = summary;
            appendFileSync(
              trace,
              `${JSON.stringify({ at: Date.now(), ...rest, bookingWaitMs: samples.BookingWaitMs })}\n`,
            );
          }
        },
      });
    };
    const containers = new LambdaContainers(coldStart);
    // End-to-end latency of a record: from SQS's SentTimestamp to the end of the invocation that
    // acknowledged it (a record returned in batchItemFailures is measured when a later delivery succeeds).
    const measured = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse | undefined> => {
      const response = await containers.invoke(event, context);
      const now = Date.now();
      const failed = new Set(response?.batchItemFailures.map((f) => f.itemIdentifier));
      for (const record of event.Records) {
        if (failed.has(record.messageId) || deferredIds.has(record.messageId)) continue;
        const ms = now - Number(originSentOf(record));
        e2e.record(ms);
        if (!isHotRecord(record.body)) e2eCold.record(ms);
      }
      return response;
    };
    const runner = new EventSourceRunner({
      client: new SQSClient(aws.clientConfig.sqs),
      queueUrl: resources.queueUrl,
      handler: measured,
      batchSize: config.batchSize,
      maximumBatchingWindowMs: config.batchSize > 10 ? 200 : 0,
      maxConcurrency: config.invocations,
      visibilityTimeoutSeconds: visibility,
      functionTimeoutMs: config.functionTimeoutMs,
      functionName: `bench-load-${config.engine}`,
    });
    await runner.start();

    const started = performance.now();
    const samples: LoadSample[] = [];
    let halvedAt: number | undefined;
    // The hot prefix's schedule item, read once a second (a read of the table, not counted as a write).
    const stateClient = new DynamoDBClient(admin.dynamodb);
    const hotBudgets =
      shards > 1
        ? Array.from({ length: shards }, (_, k) => stripeBudgetName(resources.bucket, HOT_TENANT, k, shards))
        : [`prefix:${resources.bucket}/${HOT_PREFIX}`];
    let hotSchedule: HotSchedule | undefined;
    let reads = 0;
    const readHotSchedule = () => {
      if (config.engine === 'naive' || reads++ % 4 !== 0) return;
      void scheduleState(stateClient, resources.tableName, hotBudgets)
        .then((state) => {
          if (state !== undefined) hotSchedule = state;
        })
        .catch(() => undefined);
    };
    const sample = () => {
      readHotSchedule();
      const { total, byPrefix } = model.stats();
      const t = Math.round(performance.now() - started) / 1000;
      // A deferred original is deleted too, but its copy is still to be written.
      const acked = runner.stats.deleted - deferredIds.size;
      if (
        config.halveAt !== undefined &&
        halvedAt === undefined &&
        acked >= config.messages * config.halveAt
      ) {
        model.setRates({ writesPerSecond: model.rates.writesPerSecond / 2 });
        halvedAt = t;
      }
      samples.push({
        t,
        acked,
        s3InFlight: inFlight.current,
        invocations: runner.stats.inFlight,
        throttled: total.throttled,
        s3Requests: total.requests,
        hot: hotCounters(byPrefix),
        limit: model.rates.writesPerSecond,
        dynamoWrites,
        s3Writes: inFlight.writeAttempts,
        ...(hotSchedule === undefined ? {} : { hotSchedule }),
      });
    };
    sample();
    // Every 250 ms: the re-convergence after the halving is measured in seconds.
    const sampler = setInterval(sample, 250);

    const producer = new Producer({ queueUrl: resources.queueUrl, client: sqs, resources: RESOURCES });
    const chunk = 100;
    let sent = 0;
    while (sent < config.messages) {
      // Backpressure: a bounded backlog keeps latency about the pipeline, not about an ever-growing queue.
      await runner.until((s) => sent + deferredIds.size - s.deleted <= config.backlog - chunk, {
        timeoutMs: 600_000,
      });
      const to = Math.min(config.messages, sent + chunk);
      const results = await producer.sendMany(writesFor(config, sent, to, Date.now()));
      const failed = results.filter((r) => r.error !== undefined);
      if (failed.length > 0) throw new Error(`producer: ${failed.length} sends failed: ${failed[0]!.error}`);
      sent = to;
    }
    await runner.waitForIdle({ timeoutMs: 600_000, pollIntervalMs: 200 });
    const durationMs = performance.now() - started;
    clearInterval(sampler);
    sample();
    const stats = await runner.stop();
    if (hotLog !== undefined) writeFileSync(hotLog, `${hotRequests.join('\n')}\n`);
    await containers.close();

    const written = await countObjects(s3Direct, resources.bucket);
    const endSchedule =
      config.engine === 'naive'
        ? undefined
        : await scheduleState(stateClient, resources.tableName, hotBudgets);
    stateClient.destroy();
    const deadLettered = await queueDepth(sqs, resources.dlqUrl);
    const { total, byPrefix } = model.stats();
    const hotPrefixes: LoadRunResult['hotPrefixes'] = {};
    for (const [prefix, c] of Object.entries(byPrefix))
      if (isHotPrefix(prefix)) hotPrefixes[prefix] = { ok: c.writes.ok, throttled: c.writes.throttled };
    return {
      engine: config.engine,
      messages: config.messages,
      durationMs,
      unlimited: config.unlimited === true,
      shards,
      hotPrefixes,
      ...(halvedAt === undefined ? {} : { halvedAt }),
      dynamoWrites,
      s3Writes: inFlight.writeAttempts,
      ...(endSchedule === undefined ? {} : { hotSchedule: endSchedule }),
      deferred: deferredIds.size,
      e2e: { p50: e2e.quantile(0.5), p99: e2e.quantile(0.99), max: e2e.max, count: e2e.count },
      e2eCold: {
        p50: e2eCold.quantile(0.5),
        p99: e2eCold.quantile(0.99),
        max: e2eCold.max,
        count: e2eCold.count,
      },
      throttled: total.throttled,
      s3Requests: total.requests,
      s3Attempts: inFlight.attempts,
      s3InFlightPeak: inFlight.peak,
      invocations: stats.invocations,
      redelivered: stats.redelivered,
      failedItems: stats.failedItems,
      invocationErrors: stats.errors,
      written,
      deadLettered,
      lost: config.messages - written,
      containers: containers.size,
      ...(config.engine === 'naive' ? {} : { pool }),
      samples,
    };
  } finally {
    sqs.destroy();
    s3Direct.destroy();
    await aws.stop();
  }
}

// A script, run by bench/load.ts through runInChild; the parent imports only its types.
const config = JSON.parse(process.argv[2] ?? '{}') as LoadRunConfig;
reportToParent(await runLoad(config));
process.exit(0);
