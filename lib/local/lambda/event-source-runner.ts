import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { InvalidLocalOptionError } from '../errors.js';
import { readBatchResponse } from './batch-response.js';
import { EventSourceRunnerTimeoutError } from './errors.js';
import { checkFifoOptions, FifoGroupLocks } from './fifo-groups.js';
import { createLambdaContext, type EventSource, toSqsRecord } from './sqs-event.js';

export { EventSourceRunnerTimeoutError } from './errors.js';

/** A Lambda handler for SQS events (what `createIngestHandler(config)` returns). */
export type SqsBatchHandler = (
  event: SQSEvent,
  context: Context,
) => Promise<SQSBatchResponse | undefined> | Promise<void> | SQSBatchResponse | undefined | void;

/** Settings of the local SQS event source mapping; names and defaults follow Lambda's where it has one. */
export interface EventSourceRunnerOptions {
  client: SQSClient;
  queueUrl: string;
  handler: SqsBatchHandler;
  /** Records per invocation, 1..10,000 (`BatchSize`). Above 10 needs a batching window. Default 10. */
  batchSize?: number;
  /**
   * How long to keep gathering records after the first one arrives before invoking with a partial batch,
   * 0..300,000 ms (`MaximumBatchingWindowInSeconds`, here in ms). Default 0: invoke with what one receive got.
   */
  maximumBatchingWindowMs?: number;
  /** Invocations running at once (`ScalingConfig.MaximumConcurrency`); one poller each. Default 5. */
  maxConcurrency?: number;
  /**
   * `VisibilityTimeout` sent with every ReceiveMessage, 0..43,200 s; must cover `functionTimeoutMs` (Lambda
   * refuses a mapping whose queue times out before the function). Default: the queue's own setting.
   */
  visibilityTimeoutSeconds?: number;
  /** Function timeout; a handler still running at this point fails its whole batch. Default 3,000 ms. */
  functionTimeoutMs?: number;
  /** Default `s3-ingest-local`. */
  functionName?: string;
  /** Reported as `context.memoryLimitInMB`. Default 1024. */
  memoryLimitInMB?: number;
  /** Long-poll wait of each ReceiveMessage, 0..20 s. Default 20 (what Lambda's pollers use). */
  waitTimeSeconds?: number;
  /**
   * `FunctionResponseTypes: ['ReportBatchItemFailures']`: read `batchItemFailures` from the response.
   * When false, any resolved response deletes the whole batch. Default true.
   */
  reportBatchItemFailures?: boolean;
}

/** Why an invocation failed as a whole (nothing of its batch is deleted). */
export type InvocationFailure = 'error' | 'timeout' | 'invalid-response';

/** One invocation as the runner saw it; emitted as `invocation` once its deletes are done. */
export interface InvocationResult {
  requestId: string;
  messageIds: string[];
  /** `partial`: some records listed in `batchItemFailures`; `failed`: nothing deleted. */
  outcome: 'success' | 'partial' | 'failed';
  failure?: InvocationFailure;
  /** The thrown error, or a description of the invalid response / timeout. */
  error?: unknown;
  /** Records left on the queue for redelivery after their visibility timeout. */
  failedMessageIds: string[];
  deleted: number;
  durationMs: number;
}

/** Counters since `start()`. */
export interface EventSourceRunnerStats {
  invocations: number;
  received: number;
  deleted: number;
  /** Records received again (`ApproximateReceiveCount` > 1): SQS's retries. */
  redelivered: number;
  /** Records not deleted: listed in `batchItemFailures` or part of a failed invocation. */
  failedItems: number;
  /** Invocations that failed as a whole (thrown error, timeout, invalid response). */
  errors: number;
  /** SQS calls (receive/delete) that failed; the runner backs off and carries on. */
  sqsErrors: number;
  /** Invocations whose handler has not settled yet (a timed-out handler holds its slot until it does). */
  inFlight: number;
}

export interface EventSourceRunnerEvents {
  invocation: [InvocationResult];
  'sqs-error': [unknown];
}

interface ResolvedOptions {
  batchSize: number;
  maximumBatchingWindowMs: number;
  maxConcurrency: number;
  visibilityTimeoutSeconds: number | undefined;
  functionTimeoutMs: number;
  functionName: string;
  memoryLimitInMB: number;
  waitTimeSeconds: number;
  reportBatchItemFailures: boolean;
}

const MAX_RECEIVE = 10;
const MAX_DELETE = 10;
const EMPTY_SHORT_POLL_PAUSE_MS = 50;

function checkInteger(option: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidLocalOptionError(option, `must be an integer in ${min}..${max}, got ${value}`);
  }
  return value;
}

function resolveOptions(options: EventSourceRunnerOptions): ResolvedOptions {
  const resolved: ResolvedOptions = {
    batchSize: checkInteger('batchSize', options.batchSize ?? 10, 1, 10_000),
    maximumBatchingWindowMs: checkInteger(
      'maximumBatchingWindowMs',
      options.maximumBatchingWindowMs ?? 0,
      0,
      300_000,
    ),
    maxConcurrency: checkInteger('maxConcurrency', options.maxConcurrency ?? 5, 1, 1_000),
    visibilityTimeoutSeconds:
      options.visibilityTimeoutSeconds === undefined
        ? undefined
        : checkInteger('visibilityTimeoutSeconds', options.visibilityTimeoutSeconds, 0, 43_200),
    functionTimeoutMs: checkInteger('functionTimeoutMs', options.functionTimeoutMs ?? 3_000, 1, 900_000),
    functionName: options.functionName ?? 's3-ingest-local',
    memoryLimitInMB: checkInteger('memoryLimitInMB', options.memoryLimitInMB ?? 1024, 128, 10_240),
    waitTimeSeconds: checkInteger('waitTimeSeconds', options.waitTimeSeconds ?? 20, 0, 20),
    reportBatchItemFailures: options.reportBatchItemFailures ?? true,
  };
  if (resolved.batchSize > MAX_RECEIVE && resolved.maximumBatchingWindowMs === 0) {
    throw new InvalidLocalOptionError('batchSize', 'above 10 needs a maximumBatchingWindowMs (as in Lambda)');
  }
  if (
    resolved.visibilityTimeoutSeconds !== undefined &&
    resolved.visibilityTimeoutSeconds * 1000 < resolved.functionTimeoutMs
  ) {
    throw new InvalidLocalOptionError(
      'visibilityTimeoutSeconds',
      `must cover functionTimeoutMs (${resolved.functionTimeoutMs} ms), or messages reappear mid-invocation`,
    );
  }
  return resolved;
}

type HandlerOutcome =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown }
  | { kind: 'timeout' };

function isAbort(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof Error && error.name === 'AbortError');
}

/**
 * Runs a handler against an SQS queue the way Lambda's SQS event source mapping does: `maxConcurrency`
 * pollers long-poll the queue, gather batches (several receives inside a batching window), invoke the
 * handler with an `SQSEvent` and a `Context` that has a real deadline, delete what succeeded and leave the
 * rest to the visibility timeout. Redrive to a DLQ after `maxReceiveCount` is the queue's business.
 */
export class EventSourceRunner extends EventEmitter<EventSourceRunnerEvents> {
  readonly #client: SQSClient;
  readonly #queueUrl: string;
  readonly #handler: SqsBatchHandler;
  readonly #options: ResolvedOptions;
  readonly #stats: Omit<EventSourceRunnerStats, 'inFlight'> = {
    invocations: 0,
    received: 0,
    redelivered: 0,
    deleted: 0,
    failedItems: 0,
    errors: 0,
    sqsErrors: 0,
  };
  #inFlight = 0;
  /** Pollers holding received records that are not yet in an invocation. */
  #gathering = 0;
  #source: EventSource | undefined;
  /** FIFO queues: the message groups of running invocations, each released when its invocation ends. */
  readonly #groups = new FifoGroupLocks();
  #fifo = false;
  #pollers: Promise<void>[] = [];
  #stopping = false;
  #abort = new AbortController();

  constructor(options: EventSourceRunnerOptions) {
    super();
    this.#client = options.client;
    this.#queueUrl = options.queueUrl;
    this.#handler = options.handler;
    this.#options = resolveOptions(options);
  }

  get stats(): EventSourceRunnerStats {
    return { ...this.#stats, inFlight: this.#inFlight };
  }

  get running(): boolean {
    return this.#pollers.length > 0 && !this.#stopping;
  }

  /** Resolves once the queue's ARN is known and the pollers are running. */
  async start(): Promise<void> {
    if (this.#pollers.length > 0) return;
    const [attributes, region] = await Promise.all([
      this.#client.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.#queueUrl,
          AttributeNames: ['QueueArn', 'FifoQueue'],
        }),
      ),
      this.#client.config.region(),
    ]);
    this.#fifo = attributes.Attributes?.FifoQueue === 'true';
    if (this.#fifo) checkFifoOptions(this.#options);
    this.#source = { eventSourceARN: attributes.Attributes?.QueueArn ?? '', awsRegion: region };
    this.#stopping = false;
    this.#abort = new AbortController();
    for (let i = 0; i < this.#options.maxConcurrency; i++) this.#pollers.push(this.#poll());
  }

  /**
   * Stops receiving (pending long polls are abandoned; whatever they had taken reappears after its visibility
   * timeout), invokes any batch already gathered, and resolves when every invocation has settled and its
   * deletes are done. Nothing is lost: what was not deleted stays on the queue.
   */
  async stop(): Promise<EventSourceRunnerStats> {
    this.#stopping = true;
    this.#abort.abort();
    await Promise.all(this.#pollers);
    this.#pollers = [];
    return this.stats;
  }

  /**
   * Resolves when no invocation is running or being gathered and the queue holds no message (visible,
   * in flight or delayed). Messages past `maxReceiveCount` have then moved to the DLQ.
   */
  async waitForIdle(
    options: { timeoutMs?: number; pollIntervalMs?: number } = {},
  ): Promise<EventSourceRunnerStats> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.#inFlight === 0 && this.#gathering === 0 && (await this.#queueIsEmpty())) {
        if (this.#inFlight === 0 && this.#gathering === 0) return this.stats;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new EventSourceRunnerTimeoutError('idle', timeoutMs);
      await this.#nextInvocationOr(Math.min(left, options.pollIntervalMs ?? 50));
    }
  }

  /** Resolves with the stats once `predicate` holds for them (checked after every invocation). */
  async until(
    predicate: (stats: EventSourceRunnerStats) => boolean,
    options: { timeoutMs?: number } = {},
  ): Promise<EventSourceRunnerStats> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.stats)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new EventSourceRunnerTimeoutError('predicate', timeoutMs);
      await this.#nextInvocationOr(left);
    }
    return this.stats;
  }

  #nextInvocationOr(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.off('invocation', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.on('invocation', done);
    });
  }

  async #queueIsEmpty(): Promise<boolean> {
    const { Attributes: a = {} } = await this.#client.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.#queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return (
      Number(a.ApproximateNumberOfMessages ?? 0) === 0 &&
      Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) === 0 &&
      Number(a.ApproximateNumberOfMessagesDelayed ?? 0) === 0
    );
  }

  async #poll(): Promise<void> {
    while (!this.#stopping) {
      const batch = await this.#gatherBatch();
      if (batch.length > 0) await this.#invoke(batch);
    }
  }

  async #gatherBatch(): Promise<Message[]> {
    const { batchSize, maximumBatchingWindowMs, waitTimeSeconds } = this.#options;
    const batch: Message[] = [];
    let windowEnds = 0;
    try {
      while (batch.length < batchSize && !this.#stopping) {
        const windowLeft = windowEnds - Date.now();
        if (batch.length > 0 && windowLeft <= 0) break;
        // Inside the window a long poll may not outlast it; below a second, short polls with short pauses.
        const wait = batch.length === 0 ? waitTimeSeconds : Math.min(20, Math.floor(windowLeft / 1000));
        const received = await this.#receive(Math.min(MAX_RECEIVE, batchSize - batch.length), wait);
        if (received.length > 0) {
          if (batch.length === 0) {
            this.#gathering++;
            windowEnds = Date.now() + maximumBatchingWindowMs;
          }
          batch.push(...received);
          this.#stats.received += received.length;
          for (const m of received)
            if (Number(m.Attributes?.ApproximateReceiveCount ?? 1) > 1) this.#stats.redelivered++;
          if (maximumBatchingWindowMs === 0) break;
        } else if (wait === 0) {
          const pause =
            batch.length === 0 ? EMPTY_SHORT_POLL_PAUSE_MS : Math.min(windowLeft, EMPTY_SHORT_POLL_PAUSE_MS);
          await delay(pause, undefined, { signal: this.#abort.signal });
        }
      }
    } catch (error) {
      if (!isAbort(error, this.#abort.signal)) throw error;
    } finally {
      if (batch.length > 0) this.#gathering--;
    }
    return batch;
  }

  async #receive(max: number, waitTimeSeconds: number): Promise<Message[]> {
    try {
      const response = await this.#client.send(
        new ReceiveMessageCommand({
          QueueUrl: this.#queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitTimeSeconds,
          VisibilityTimeout: this.#options.visibilityTimeoutSeconds,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: this.#abort.signal },
      );
      return response.Messages ?? [];
    } catch (error) {
      if (isAbort(error, this.#abort.signal)) throw error;
      this.#stats.sqsErrors++;
      this.emit('sqs-error', error);
      await delay(250, undefined, { signal: this.#abort.signal });
      return [];
    }
  }

  async #invoke(messages: Message[]): Promise<void> {
    const { functionTimeoutMs, functionName, memoryLimitInMB } = this.#options;
    const source = this.#source!;
    const event: SQSEvent = { Records: messages.map((m) => toSqsRecord(m, source)) };
    // FIFO: one invocation per message group at a time (SQS locks a group while its messages are in
    // flight; a backend that does not is held to it here). The function's clock starts once it runs.
    const releaseGroups = this.#fifo ? await this.#groups.hold(event.Records) : () => {};
    const started = performance.now();
    const context = createLambdaContext({
      functionName,
      memoryLimitInMB,
      region: source.awsRegion,
      deadline: Date.now() + functionTimeoutMs,
    });
    this.#inFlight++;
    this.#stats.invocations++;
    let settled!: Promise<unknown>;
    const outcome = await new Promise<HandlerOutcome>((resolve) => {
      const timer = setTimeout(() => resolve({ kind: 'timeout' }), functionTimeoutMs);
      settled = Promise.resolve()
        .then(() => this.#handler(event, context))
        .then(
          (value) => resolve({ kind: 'returned', value }),
          (error: unknown) => resolve({ kind: 'threw', error }),
        )
        .finally(() => clearTimeout(timer));
    });
    const result = this.#judge(event, outcome);
    const succeeded = event.Records.filter(
      (r) => result.outcome !== 'failed' && !result.failedIds.has(r.messageId),
    );
    const deleted = await this.#delete(succeeded.map((r) => r.receiptHandle));
    const failedMessageIds =
      result.outcome === 'failed' ? event.Records.map((r) => r.messageId) : [...result.failedIds];
    this.#stats.deleted += deleted;
    this.#stats.failedItems += failedMessageIds.length;
    if (result.outcome === 'failed') this.#stats.errors++;
    const invocation: InvocationResult = {
      requestId: context.awsRequestId,
      messageIds: event.Records.map((r) => r.messageId),
      outcome: result.outcome,
      failedMessageIds,
      deleted,
      durationMs: performance.now() - started,
    };
    if (result.failure !== undefined) invocation.failure = result.failure;
    if (result.error !== undefined) invocation.error = result.error;
    this.emit('invocation', invocation);
    // Lambda would freeze a timed-out sandbox; in-process the handler keeps running, so it keeps its slot
    // until it settles and in-flight work never exceeds maxConcurrency.
    await settled;
    releaseGroups();
    this.#inFlight--;
  }

  #judge(
    event: SQSEvent,
    outcome: HandlerOutcome,
  ): {
    outcome: InvocationResult['outcome'];
    failedIds: ReadonlySet<string>;
    failure?: InvocationFailure;
    error?: unknown;
  } {
    const none = new Set<string>();
    if (outcome.kind === 'timeout') {
      return {
        outcome: 'failed',
        failedIds: none,
        failure: 'timeout',
        error: `Task timed out after ${this.#options.functionTimeoutMs} ms`,
      };
    }
    if (outcome.kind === 'threw')
      return { outcome: 'failed', failedIds: none, failure: 'error', error: outcome.error };
    if (!this.#options.reportBatchItemFailures) return { outcome: 'success', failedIds: none };
    const verdict = readBatchResponse(outcome.value, new Set(event.Records.map((r) => r.messageId)));
    switch (verdict.kind) {
      case 'success':
        return { outcome: 'success', failedIds: none };
      case 'partial':
        return { outcome: 'partial', failedIds: verdict.failedMessageIds };
      case 'invalid-response':
        return { outcome: 'failed', failedIds: none, failure: 'invalid-response', error: verdict.reason };
    }
  }

  /** Deletes by receipt handle in chunks of 10; returns how many SQS acknowledged. */
  async #delete(receiptHandles: string[]): Promise<number> {
    let deleted = 0;
    for (let i = 0; i < receiptHandles.length; i += MAX_DELETE) {
      const chunk = receiptHandles.slice(i, i + MAX_DELETE);
      deleted += await this.#deleteChunk(chunk);
    }
    return deleted;
  }

  async #deleteChunk(receiptHandles: string[], attempt = 1): Promise<number> {
    try {
      const response = await this.#client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.#queueUrl,
          Entries: receiptHandles.map((ReceiptHandle, index) => ({ Id: String(index), ReceiptHandle })),
        }),
      );
      const failed = response.Failed ?? [];
      if (failed.length > 0) {
        this.#stats.sqsErrors += failed.length;
        this.emit('sqs-error', failed);
      }
      return response.Successful?.length ?? 0;
    } catch (error) {
      this.#stats.sqsErrors++;
      this.emit('sqs-error', error);
      // A lost delete only means a redelivery (at-least-once), but retry a little as Lambda's poller does.
      if (attempt >= 3) return 0;
      await delay(100 * attempt);
      return this.#deleteChunk(receiptHandles, attempt + 1);
    }
  }
}
