import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SendMessageBatchResult,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { SQS_LIMITS } from '../aws/sqs-limits.js';
import { exponentialDelay } from '../backoff/index.js';
import { InvalidBatchError, InvalidMessageError, type InvalidWriteIssue, SendFailedError } from './errors.js';
import { sha256Hex } from './message/derive-id.js';
import { encodeWrite } from './message/encode.js';
import { processSeq } from './message/monotonic-seq.js';
import type { ProducerWrite, ResourceNames } from './message/types.js';

/**
 * The default FIFO message group: the record (`<tenant>/<resource>/<id>`; an insert without id, by its
 * `key`, else per resource). When that is no valid group id (over 128 characters, or a character SQS
 * refuses), its SHA-256 instead: still one group per record.
 */
export function recordMessageGroup(write: ProducerWrite): string {
  const record = write.id ?? (write.key === undefined ? undefined : `key:${write.key}`);
  const group =
    record === undefined
      ? `${write.tenant}/${write.resource}`
      : `${write.tenant}/${write.resource}/${record}`;
  return SQS_LIMITS.fifoIdPattern.test(group) ? group : sha256Hex(group);
}

export interface ProducerOptions {
  /** The ingestion queue. */
  readonly queueUrl: string;
  /** A shared SQS client; whole-call failures (throttling, 5xx, network) are retried by its retry strategy. */
  readonly client: SQSClient;
  /** Declared resources (`config.resources`); when given, writes to others are refused before sending. */
  readonly resources?: ResourceNames;
  /** Whether the queue is FIFO. Default: `queueUrl` ends with `.fifo`. */
  readonly fifo?: boolean;
  /**
   * FIFO only: the message group of a write; SQS orders messages within a group. Default
   * `recordMessageGroup`: one group per record (`<tenant>/<resource>/<id>`), so one record's writes stay in
   * order while different records flow in parallel. Must return 1..128 printable ASCII characters (else the
   * write is refused with `invalid-message-group`). Keep a group within one tenant: the handler cannot
   * order writes of different tenants, and redelivers a group from its first change of tenant in a batch.
   */
  readonly messageGroupId?: (write: ProducerWrite) => string;
  /** Largest encoded message accepted. Default 262,144 (256 KiB, SQS's classic limit). */
  readonly maxMessageBytes?: number;
  /** Largest SendMessageBatch payload (sum of bodies). Default 262,144 (256 KiB). */
  readonly maxBatchBytes?: number;
  /** Retries of entries SQS reported as failed without sender fault. Default 3. */
  readonly retries?: number;
  /** Backoff before retry n is uniform in [0, min(max, base * 2^(n-1))] ms (full jitter). Default 50. */
  readonly retryBaseDelayMs?: number;
  /** Cap of one backoff. Default 2,000 ms. */
  readonly retryMaxDelayMs?: number;
  /** SendMessageBatch calls in flight per `sendMany`. Default 4; 1 on FIFO queues (keeps group order). */
  readonly concurrency?: number;
  /**
   * The `seq` of a write that has none (a write's own `seq` is always kept). Must never go backwards.
   * Default: the process-wide `MonotonicSeq` (milliseconds x 1000 + a counter), shared by every Producer.
   * @default () => processSeq.next()
   * @example new Producer({ queueUrl, client, nextSeq: () => cdcLogPosition() })
   */
  readonly nextSeq?: () => number;
}

/** What SQS answered for one write. */
export interface SentMessage {
  readonly messageId: string;
  /** FIFO queues only. */
  readonly sequenceNumber?: string;
}

/** Per-write outcome of `sendMany`, at the write's index. */
export type SendResult =
  | ({ readonly index: number; readonly error?: undefined } & SentMessage)
  | { readonly index: number; readonly error: SendFailedError };

export interface SendOptions {
  /** Aborts in-flight calls and pending retries; unsent writes then fail with code `Aborted`. */
  readonly signal?: AbortSignal;
}

interface Prepared {
  readonly index: number;
  readonly entry: SendMessageBatchRequestEntry;
  readonly bytes: number;
  attempts: number;
}

function isObject(value: unknown): value is ProducerWrite {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sends contract v1 messages to the ingestion queue. Every write is validated with the handler's own
 * parser first, so nothing the handler would dead-letter is ever sent.
 */
export class Producer {
  readonly #queueUrl: string;
  readonly #client: SQSClient;
  readonly #resources: ResourceNames | undefined;
  readonly #fifo: boolean;
  readonly #groupOf: (write: ProducerWrite) => string;
  readonly #maxMessageBytes: number;
  readonly #maxBatchBytes: number;
  readonly #retries: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #concurrency: number;
  readonly #nextSeq: () => number;

  constructor(options: ProducerOptions) {
    this.#queueUrl = options.queueUrl;
    this.#client = options.client;
    this.#resources = options.resources;
    this.#fifo = options.fifo ?? options.queueUrl.endsWith('.fifo');
    this.#groupOf = options.messageGroupId ?? recordMessageGroup;
    this.#maxMessageBytes = options.maxMessageBytes ?? SQS_LIMITS.classicPayloadBytes;
    this.#maxBatchBytes = options.maxBatchBytes ?? SQS_LIMITS.classicPayloadBytes;
    this.#retries = options.retries ?? 3;
    this.#baseDelayMs = options.retryBaseDelayMs ?? 50;
    this.#maxDelayMs = options.retryMaxDelayMs ?? 2000;
    this.#concurrency = Math.max(1, options.concurrency ?? (this.#fifo ? 1 : 4));
    this.#nextSeq = options.nextSeq ?? (() => processSeq.next());
  }

  /**
   * Sends one write. Rejects with `InvalidMessageError` (nothing sent) when it breaks the contract, with
   * `InvalidBatchError` (one issue, `invalid-message-group`) when the `messageGroupId` option returns an
   * unusable group, or with `SendFailedError` when SQS did not take it after retries.
   */
  async send(write: ProducerWrite, options: SendOptions = {}): Promise<SentMessage> {
    const prepared = this.#prepare(write, 0);
    if ('issue' in prepared) {
      const { reason, detail } = prepared.issue;
      if (reason === 'invalid-message-group') throw new InvalidBatchError([prepared.issue]);
      throw new InvalidMessageError(reason, detail);
    }
    const [result] = await this.#sendAll([prepared], 1, options.signal);
    if (result === undefined) throw new Error('unreachable: one write, one result');
    if (result.error !== undefined) throw result.error;
    return result.sequenceNumber === undefined
      ? { messageId: result.messageId }
      : { messageId: result.messageId, sequenceNumber: result.sequenceNumber };
  }

  /**
   * Sends writes in SendMessageBatch calls (up to 10 entries and `maxBatchBytes` each, packed in order).
   * All or nothing on validation: if any write is invalid, rejects with `InvalidBatchError` listing every
   * invalid index and reason, and sends nothing. Otherwise resolves to one result per write, in input order:
   * `{ index, messageId }` or `{ index, error }` (a `SendFailedError`); it never rejects for send failures.
   */
  async sendMany(writes: readonly ProducerWrite[], options: SendOptions = {}): Promise<SendResult[]> {
    const prepared: Prepared[] = [];
    const issues: InvalidWriteIssue[] = [];
    writes.forEach((write, index) => {
      const outcome = this.#prepare(write, index);
      if ('issue' in outcome) issues.push(outcome.issue);
      else prepared.push(outcome);
    });
    if (issues.length > 0) throw new InvalidBatchError(issues);
    return this.#sendAll(prepared, writes.length, options.signal);
  }

  #prepare(write: ProducerWrite, index: number): Prepared | { issue: InvalidWriteIssue } {
    let encoded: ReturnType<typeof encodeWrite>;
    try {
      // Stamped once here: a retried entry resends the same body, so the handler sees one write, not two.
      const sequenced =
        isObject(write) && write.seq === undefined ? { ...write, seq: this.#nextSeq() } : write;
      encoded = encodeWrite(sequenced, { resources: this.#resources });
    } catch (err) {
      if (err instanceof InvalidMessageError)
        return { issue: { index, reason: err.reason, detail: err.detail } };
      throw err;
    }
    if (encoded.bytes > this.#maxMessageBytes) {
      const detail = `body: ${encoded.bytes} bytes encoded, the queue takes at most ${this.#maxMessageBytes}`;
      return { issue: { index, reason: 'too-large', detail } };
    }
    const entry: SendMessageBatchRequestEntry = { Id: String(index), MessageBody: encoded.body };
    if (this.#fifo) {
      const group = this.#groupOf(write);
      if (typeof group !== 'string' || !SQS_LIMITS.fifoIdPattern.test(group)) {
        const detail = `messageGroupId: must be 1..128 printable ASCII characters, got ${JSON.stringify(group)}`;
        return { issue: { index, reason: 'invalid-message-group', detail } };
      }
      entry.MessageGroupId = group;
      // Scoped by tenant and resource, so equal keys of different tenants are not deduplicated together.
      // Without a key, a random id per write: the stack's FIFO queues do not deduplicate by content (two
      // equal bodies can be two writes), and the id stays the same across this producer's retries.
      entry.MessageDeduplicationId =
        write.key === undefined ? randomUUID() : sha256Hex(`${write.tenant}/${write.resource}/${write.key}`);
    }
    return { index, entry, bytes: encoded.bytes, attempts: 0 };
  }

  async #sendAll(prepared: readonly Prepared[], total: number, signal?: AbortSignal): Promise<SendResult[]> {
    const results: SendResult[] = new Array(total);
    const batches = this.#pack(prepared);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let batch = batches[next++]; batch !== undefined; batch = batches[next++]) {
        await this.#sendBatch(batch, results, signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, batches.length) }, worker));
    return results;
  }

  /** Greedy and order-preserving (FIFO order within a group depends on it). */
  #pack(prepared: readonly Prepared[]): Prepared[][] {
    const batches: Prepared[][] = [];
    let current: Prepared[] = [];
    let bytes = 0;
    for (const item of prepared) {
      if (
        current.length === SQS_LIMITS.batchEntries ||
        (current.length > 0 && bytes + item.bytes > this.#maxBatchBytes)
      ) {
        batches.push(current);
        current = [];
        bytes = 0;
      }
      current.push(item);
      bytes += item.bytes;
    }
    if (current.length > 0) batches.push(current);
    return batches;
  }

  async #sendBatch(batch: readonly Prepared[], results: SendResult[], signal?: AbortSignal): Promise<void> {
    let pending = batch;
    for (let attempt = 1; pending.length > 0; attempt++) {
      for (const item of pending) item.attempts++;
      let response: SendMessageBatchResult;
      try {
        if (signal?.aborted) throw signal.reason;
        response = await this.#client.send(
          new SendMessageBatchCommand({ QueueUrl: this.#queueUrl, Entries: pending.map((p) => p.entry) }),
          { abortSignal: signal },
        );
      } catch (cause) {
        // The SDK already retried what it deems retryable; what reaches here fails the whole call.
        const error = cause as { name?: string; message?: string; $fault?: string };
        const code = signal?.aborted ? 'Aborted' : (error.name ?? 'Error');
        for (const item of pending) {
          const err = new SendFailedError(
            code,
            error.$fault === 'client',
            item.attempts,
            error.message ?? '',
            {
              cause,
            },
          );
          results[item.index] = { index: item.index, error: err };
        }
        return;
      }
      const byId = new Map(pending.map((p) => [p.entry.Id, p]));
      for (const ok of response.Successful ?? []) {
        const item = byId.get(ok.Id);
        if (item === undefined || ok.MessageId === undefined) continue;
        byId.delete(ok.Id);
        results[item.index] =
          ok.SequenceNumber === undefined
            ? { index: item.index, messageId: ok.MessageId }
            : { index: item.index, messageId: ok.MessageId, sequenceNumber: ok.SequenceNumber };
      }
      const retry: Prepared[] = [];
      const failures = new Map((response.Failed ?? []).map((f) => [f.Id, f]));
      for (const item of byId.values()) {
        const failure = failures.get(item.entry.Id);
        const senderFault = failure?.SenderFault === true;
        if (!senderFault && attempt <= this.#retries) {
          retry.push(item);
          continue;
        }
        const code = failure?.Code ?? 'MissingResult';
        const message = failure?.Message ?? 'SQS reported neither success nor failure for this entry';
        results[item.index] = {
          index: item.index,
          error: new SendFailedError(code, senderFault, item.attempts, message),
        };
      }
      pending = retry;
      if (pending.length > 0) {
        try {
          await sleep(exponentialDelay(attempt, this.#baseDelayMs, this.#maxDelayMs), undefined, { signal });
        } catch {
          // Aborted during backoff: the next iteration reports the pending entries as aborted.
        }
      }
    }
  }
}
