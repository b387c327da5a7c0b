// Helpers of the handler's unit tests: everything in process (memory store, memory dead-letter sink,
// memory rate budgets), no emulator.
import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { S3ServiceException } from '@aws-sdk/client-s3';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { BehaviourModel } from '../../../../lib/db/behaviour-model.js';
import { MemoryObjectStore } from '../../../../lib/db/memory-object-store.js';
import type {
  ListObjectsInput,
  ListObjectsPage,
  ObjectHead,
  ObjectStore,
  PutObjectInput,
  StoreCallOptions,
  StoredObject,
} from '../../../../lib/db/object-store.js';
import { type IngestConfig, loadConfig } from '../../../../lib/ingest/config.js';
import {
  createIngestHandler,
  type IngestHandler,
  type IngestHandlerOptions,
  type InvocationSummary,
} from '../../../../lib/ingest/handler/ingest-handler.js';
import type { RateBudgetFactory } from '../../../../lib/ingest/handler/run/rate-holder.js';
import { MemoryDeadLetterSink } from '../../../../lib/ingest/handler/settle/memory-dead-letter-sink.js';
import { withBookingCalls } from '../../../../lib/semaphore/booking-calls.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../../lib/semaphore/memory-rate-budget.js';
import type { BookingReport, BookOptions, RateBooking } from '../../../../lib/semaphore/rate-types.js';

/** A Lambda `Context` whose `getRemainingTimeInMillis()` counts down (wall clock) from `remainingMs`. */
export function lambdaContext(remainingMs: number): Context {
  const endsAt = Date.now() + remainingMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'ingest-test',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:ingest-test',
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/ingest-test',
    logStreamName: 'test',
    getRemainingTimeInMillis: () => Math.max(0, endsAt - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

export interface TestMessage {
  tenant?: string;
  resource?: string;
  op?: 'insert' | 'upsert' | 'update' | 'delete';
  id?: string;
  data?: Record<string, unknown>;
  priority?: number;
  key?: string;
  seq?: number;
}

/** A contract-v1 body (defaults: tenant acme, resource orders, upsert). */
export function body(m: TestMessage = {}): string {
  const op = m.op ?? 'upsert';
  return JSON.stringify({
    v: 1,
    tenant: m.tenant ?? 'acme',
    resource: m.resource ?? 'orders',
    op,
    ...(m.id === undefined ? {} : { id: m.id }),
    ...(op === 'delete' ? {} : { data: m.data ?? { total: 1 } }),
    ...(m.priority === undefined ? {} : { priority: m.priority }),
    ...(m.key === undefined ? {} : { key: m.key }),
    ...(m.seq === undefined ? {} : { seq: m.seq }),
  });
}

let lastSentTimestamp = 0;
/**
 * Strictly increasing, like distinct sends: a message without `seq` is ordered by its SentTimestamp, so
 * records built one after the other keep their order (equal timestamps would be ordered by message id).
 */
function nextSentTimestamp(): number {
  lastSentTimestamp = Math.max(Date.now(), lastSentTimestamp + 1);
  return lastSentTimestamp;
}

export function sqsRecord(messageBody: string, messageId: string = randomUUID()): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: messageBody,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(nextSentTimestamp()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:ingest',
    awsRegion: 'us-east-1',
  };
}

/** An SQS event of one record per body (string) or per message. */
export function sqsEvent(items: readonly (string | TestMessage | SQSRecord)[]): SQSEvent {
  return {
    Records: items.map((item) =>
      typeof item === 'string' ? sqsRecord(item) : 'receiptHandle' in item ? item : sqsRecord(body(item)),
    ),
  };
}

export function ids(event: SQSEvent): string[] {
  return event.Records.map((r) => r.messageId);
}

export function failedIds(response: { batchItemFailures: { itemIdentifier: string }[] }): string[] {
  return response.batchItemFailures.map((f) => f.itemIdentifier).sort();
}

/** One storage call as the tracking store saw it. */
export interface StoreCall {
  readonly kind: 'put' | 'get' | 'head' | 'delete' | 'list';
  readonly key: string;
  readonly signal: AbortSignal | undefined;
  /** Order in which the call started (0-based, all kinds). */
  readonly seq: number;
  /** The tenant's in-flight calls (this one included) when it started. */
  readonly tenantInFlight: number;
  settled?: 'ok' | 'error';
}

/** Decides what to do with a call before it reaches the bucket: resolve to go on, throw to fail it. */
export type StoreHook = (call: StoreCall) => void | Promise<void>;

function tenantOf(key: string): string {
  return /^t=([^/]+)\//.exec(key)?.[1] ?? '';
}

/**
 * A real `MemoryObjectStore` (conditional writes enforced, optional S3 behaviour model) wrapped to record
 * every call: order, signals, in-flight counts overall and per tenant, with a hook to inject failures.
 */
export class TrackingStore implements ObjectStore {
  readonly inner: MemoryObjectStore;
  readonly calls: StoreCall[] = [];
  hook: StoreHook | undefined;
  inFlight = 0;
  maxInFlight = 0;
  readonly #tenantInFlight = new Map<string, number>();
  readonly maxInFlightByTenant = new Map<string, number>();

  constructor(options: { bucket?: string; model?: BehaviourModel } = {}) {
    this.inner = new MemoryObjectStore({
      bucket: options.bucket ?? `handler-${randomUUID()}`,
      ...(options.model === undefined ? {} : { model: options.model }),
    });
  }

  get bucket(): string {
    return this.inner.bucket;
  }

  /** Every key in the bucket, sorted. */
  keys(): string[] {
    return [...this.inner.objects.sortedKeys()];
  }

  /** The stored record at `key` (parsed), or undefined. */
  record(key: string): Record<string, unknown> | undefined {
    const entry = this.inner.objects.objects.get(key);
    return entry === undefined ? undefined : (JSON.parse(entry.body) as Record<string, unknown>);
  }

  writes(): StoreCall[] {
    return this.calls.filter((c) => c.kind === 'put' || c.kind === 'delete');
  }

  put(input: PutObjectInput, options?: StoreCallOptions): Promise<{ etag: string }> {
    return this.#track('put', input.key, options, () => this.inner.put(input, options));
  }
  get(key: string, options?: StoreCallOptions): Promise<StoredObject | undefined> {
    return this.#track('get', key, options, () => this.inner.get(key, options));
  }
  head(key: string, options?: StoreCallOptions): Promise<ObjectHead | undefined> {
    return this.#track('head', key, options, () => this.inner.head(key, options));
  }
  delete(key: string, options?: StoreCallOptions): Promise<void> {
    return this.#track('delete', key, options, () => this.inner.delete(key, options));
  }
  list(input: ListObjectsInput, options?: StoreCallOptions): Promise<ListObjectsPage> {
    return this.#track('list', input.prefix, options, () => this.inner.list(input, options));
  }

  async #track<R>(
    kind: StoreCall['kind'],
    key: string,
    options: StoreCallOptions | undefined,
    run: () => Promise<R>,
  ): Promise<R> {
    const tenant = tenantOf(key);
    const tenantNow = (this.#tenantInFlight.get(tenant) ?? 0) + 1;
    this.#tenantInFlight.set(tenant, tenantNow);
    this.maxInFlightByTenant.set(tenant, Math.max(this.maxInFlightByTenant.get(tenant) ?? 0, tenantNow));
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const call: StoreCall = {
      kind,
      key,
      signal: options?.signal,
      seq: this.calls.length,
      tenantInFlight: tenantNow,
    };
    this.calls.push(call);
    try {
      await this.hook?.(call);
      const result = await run();
      call.settled = 'ok';
      return result;
    } catch (err) {
      call.settled = 'error';
      throw err;
    } finally {
      this.inFlight--;
      this.#tenantInFlight.set(tenant, (this.#tenantInFlight.get(tenant) ?? 1) - 1);
    }
  }
}

/** `RESOURCES` of the unit tests: `orders` schemaless, `customers` with a schema. */
export const TEST_RESOURCES = {
  orders: {},
  customers: {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
    required: ['name'],
  },
} as const;

export function testConfig(env: Record<string, string> = {}): IngestConfig {
  return loadConfig({
    BUCKET_NAME: 'ignored-by-memory-store',
    DLQ_URL: 'http://127.0.0.1:1/000000000000/unset',
    RESOURCES: JSON.stringify(TEST_RESOURCES),
    POOL_CONCURRENCY: '8',
    WRITE_RETRIES: '0',
    WRITE_TIMEOUT_MS: '2000',
    DEADLINE_MARGIN_MS: '2000',
    ...env,
  });
}

export const silentLogger = (): Logger => new Logger({ serviceName: 'ingest-test', logLevel: 'SILENT' });

/** A Metrics instance that never prints (the unit tests read figures from `onInvocation`). */
export function quietMetrics(): Metrics {
  const previous = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  try {
    const metrics = new Metrics({ namespace: 'test', serviceName: 'ingest-test' });
    // The per-cause/per-reason lines go through singleMetric(), a new instance: quiet too.
    metrics.singleMetric = quietMetrics;
    return metrics;
  } finally {
    if (previous === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
    else process.env.POWERTOOLS_METRICS_DISABLED = previous;
  }
}

export interface TestHandler {
  readonly handler: IngestHandler;
  readonly store: TrackingStore;
  readonly deadLetters: MemoryDeadLetterSink;
  readonly summaries: InvocationSummary[];
  readonly config: IngestConfig;
}

export type TestHandlerOptions = Omit<IngestHandlerOptions, 'store' | 'deadLetters'> & {
  store?: TrackingStore;
  deadLetters?: MemoryDeadLetterSink;
};

/** A handler on a tracking store and a memory dead-letter sink, with quiet logs and metrics. */
export function testHandler(env: Record<string, string> = {}, options: TestHandlerOptions = {}): TestHandler {
  const config = testConfig(env);
  const store = options.store ?? new TrackingStore();
  const deadLetters = options.deadLetters ?? new MemoryDeadLetterSink();
  const summaries: InvocationSummary[] = [];
  const handler = createIngestHandler(config, {
    logger: silentLogger(),
    metrics: quietMetrics(),
    // No SQS here: a test that checks the redelivery backoff or deferrals passes its own port.
    redeliveries: false,
    deferrals: false,
    ...options,
    store,
    deadLetters,
    onInvocation: (summary) => {
      summaries.push(summary);
      options.onInvocation?.(summary);
    },
  });
  return { handler, store, deadLetters, summaries, config };
}

/** The S3 key of a record in the layout. */
export function keyOf(tenant: string, resource: string, id: string): string {
  return `t=${tenant}/r=${resource}/id=${id}.json`;
}

/** S3's 500 InternalError as the SDK shows it: transient, retryable. */
export function internalError(): S3ServiceException {
  return new S3ServiceException({
    name: 'InternalError',
    $fault: 'server',
    $metadata: { httpStatusCode: 500 },
    message: 'We encountered an internal error. Please try again.',
  });
}

/** The rate budget name of `tenant`'s prefix in the test bucket (`testConfig`'s BUCKET_NAME). */
export function prefixOf(tenant: string): string {
  return `prefix:ignored-by-memory-store/t=${tenant}/`;
}

/** One budget call as `memoryBudgets` saw it. */
export type BudgetCall =
  | { readonly name: string; readonly book: BookOptions }
  | { readonly name: string; readonly report: BookingReport };

/**
 * Calls a test intercepts: each runs before the memory budget's own, and fails the call when it throws
 * (the store unreachable, a report lost).
 */
export interface BudgetHooks {
  book?(name: string, options: BookOptions): void | Promise<void>;
  /** After the memory budget booked, before its answer reaches the holder (a slow round trip). */
  booked?(name: string, booking: RateBooking): void | Promise<void>;
  report?(
    name: string,
    report: BookingReport,
    options?: { readonly signal?: AbortSignal },
  ): void | Promise<void>;
}

/**
 * Memory rate budgets over one shared `MemoryBudgetTable` (what the fleet's DynamoDB table is to the
 * handlers), recording each booking and report, with hooks to fail them. `bookAhead` books a prefix's
 * schedule as another invocation would, so the handler's tenant finds its first free slot later.
 */
export function memoryBudgets(hooks: BudgetHooks = {}) {
  const table = new MemoryBudgetTable();
  const made = new Map<string, MemoryRateBudget>();
  const calls: BudgetCall[] = [];
  const factory: RateBudgetFactory = (name, ceiling, startRate) => {
    const inner = new MemoryRateBudget({ name, ceiling, startRate, table });
    made.set(name, inner);
    return {
      name,
      ceiling: inner.ceiling,
      book: async (options) => {
        calls.push({ name, book: options });
        await hooks.book?.(name, options);
        const booking = await inner.book(options);
        await hooks.booked?.(name, booking);
        return withBookingCalls(booking, {
          step: (round, stepOptions) => booking.step(round, stepOptions),
          report: async (report, reportOptions) => {
            calls.push({ name, report });
            await hooks.report?.(name, report, reportOptions);
            await booking.report(report, reportOptions);
          },
        });
      },
    };
  };
  /** Books `name`'s schedule at `ceiling` writes/s from now for `ms` (another invocation's writes). */
  const bookAhead = (name: string, ceiling: number, ms: number): Promise<RateBooking> => {
    const now = Date.now();
    return new MemoryRateBudget({ name, ceiling, table }).book({
      writes: Math.max(1, Math.ceil((ceiling * ms) / 1000)),
      latestStart: now + ms,
      writeBy: now + ms,
    });
  };
  const books = () => calls.flatMap((c) => ('book' in c ? [{ name: c.name, options: c.book }] : []));
  const reports = () => calls.flatMap((c) => ('report' in c ? [{ name: c.name, report: c.report }] : []));
  return { table, made, calls, factory, bookAhead, books, reports };
}
