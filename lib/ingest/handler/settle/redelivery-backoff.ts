import type { Logger } from '@aws-lambda-powertools/logger';
import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchItemFailure, SQSRecord } from 'aws-lambda';
import { SQS_LIMITS } from '../../../aws/sqs-limits.js';
import { exponentialDelay } from '../../../backoff/index.js';
import { rejectOnAbort } from './send-dead-letters.js';

/**
 * How long a failed record stays invisible before SQS redelivers it, from how often it was received:
 * `min(baseSeconds x 2^(receiveCount - 1), maxSeconds)`. Without it a record waits out the queue's
 * visibility timeout (6 x the function timeout), which under throttling is most of the end-to-end latency.
 * @example { baseSeconds: 5, maxSeconds: 300 } // 5 s, 10 s, 20 s, ... 300 s
 */
export interface RedeliveryBackoffOptions {
  /**
   * Invisibility after the first failed receive, in seconds.
   * @default 5
   */
  readonly baseSeconds?: number;
  /**
   * Cap, in seconds (SQS allows up to 43,200).
   * @default 300
   */
  readonly maxSeconds?: number;
  /**
   * Invisibility after the first receive for a record that only ran out of turn: its prefix's permits were
   * all held until the invocation's cutoff (`permits-unavailable`), or the cutoff stopped its write
   * (`deadline`). S3 did not refuse it, and back in the queue it waits for its prefix's permits again, so it
   * comes back sooner (doubling from this, up to `maxSeconds`) and the hot prefix is not left idle while its
   * records sit out a backoff meant for an overloaded S3.
   * @default 1
   */
  readonly turnSeconds?: number;
}

/** One record's new visibility timeout. */
export interface VisibilityChange {
  readonly queueUrl: string;
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly visibilityTimeoutSeconds: number;
}

/**
 * Where visibility changes go (`SqsVisibility` in Lambda). Resolves the message ids whose change was not
 * accepted; may reject as a whole. Neither changes any record's outcome.
 */
export interface VisibilityPort {
  change(
    changes: readonly VisibilityChange[],
    options: { signal: AbortSignal },
  ): Promise<ReadonlySet<string>>;
}

/** The defaults of `RedeliveryBackoffOptions`. */
export const DEFAULT_REDELIVERY_BACKOFF = { baseSeconds: 5, maxSeconds: 300, turnSeconds: 1 } as const;

/**
 * `min(base x 2^(n-1), max)` in whole seconds for the `n`th receive (n < 1 counts as 1); `base` is
 * `turnSeconds` for a record that only waited for its turn (`waitedForTurn`), else `baseSeconds`.
 */
export function visibilityTimeoutFor(
  receiveCount: number,
  options: RedeliveryBackoffOptions = {},
  waitedForTurn = false,
): number {
  const base = waitedForTurn
    ? (options.turnSeconds ?? DEFAULT_REDELIVERY_BACKOFF.turnSeconds)
    : (options.baseSeconds ?? DEFAULT_REDELIVERY_BACKOFF.baseSeconds);
  const max = Math.min(
    options.maxSeconds ?? DEFAULT_REDELIVERY_BACKOFF.maxSeconds,
    SQS_LIMITS.maxVisibilitySeconds,
  );
  const n = Number.isFinite(receiveCount) && receiveCount >= 1 ? Math.floor(receiveCount) : 1;
  return Math.max(0, Math.floor(exponentialDelay(n, base, max, 'none')));
}

/**
 * The queue URL of an SQS ARN (`arn:aws:sqs:<region>:<account>:<name>`), as SQS itself forms it; the
 * SDK sends it to the configured endpoint when there is one (emulators). `undefined` for anything else.
 */
export function queueUrlOf(arn: string): string | undefined {
  const match = /^arn:(aws[a-z-]*):sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/.exec(arn);
  if (match === null) return undefined;
  const [, partition, region, account, name] = match;
  const domain = partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://sqs.${region}.${domain}/${account}/${name}`;
}

/**
 * `ChangeMessageVisibilityBatch` in chunks of 10 per queue, every request carrying the signal. A backoff
 * never makes a record wait longer than the queue itself would: each timeout is capped at the queue's
 * `VisibilityTimeout`, read once per queue per container (`GetQueueAttributes`; when that fails, uncapped).
 */
export class SqsVisibility implements VisibilityPort {
  readonly #queueTimeouts = new Map<string, number>();

  constructor(private readonly sqs: SQSClient) {}

  async #queueTimeout(queueUrl: string, signal: AbortSignal): Promise<number> {
    const known = this.#queueTimeouts.get(queueUrl);
    if (known !== undefined) return known;
    try {
      const { Attributes } = await this.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['VisibilityTimeout'] }),
        { abortSignal: signal },
      );
      const seconds = Number(Attributes?.VisibilityTimeout);
      if (!Number.isFinite(seconds)) return SQS_LIMITS.maxVisibilitySeconds;
      this.#queueTimeouts.set(queueUrl, seconds);
      return seconds;
    } catch {
      return SQS_LIMITS.maxVisibilitySeconds;
    }
  }

  async change(changes: readonly VisibilityChange[], { signal }: { signal: AbortSignal }) {
    const refused = new Set<string>();
    const byQueue = new Map<string, VisibilityChange[]>();
    for (const c of changes) byQueue.set(c.queueUrl, [...(byQueue.get(c.queueUrl) ?? []), c]);
    const requests: Promise<void>[] = [];
    for (const [queueUrl, all] of byQueue) {
      const cap = await this.#queueTimeout(queueUrl, signal);
      const entries = all.map((c) => ({
        ...c,
        visibilityTimeoutSeconds: Math.min(c.visibilityTimeoutSeconds, cap),
      }));
      for (let i = 0; i < entries.length; i += SQS_LIMITS.batchEntries) {
        const chunk = entries.slice(i, i + SQS_LIMITS.batchEntries);
        requests.push(
          this.sqs
            .send(
              new ChangeMessageVisibilityBatchCommand({
                QueueUrl: queueUrl,
                Entries: chunk.map((c, index) => ({
                  Id: String(index),
                  ReceiptHandle: c.receiptHandle,
                  VisibilityTimeout: c.visibilityTimeoutSeconds,
                })),
              }),
              { abortSignal: signal },
            )
            .then(
              (response) => {
                for (const failed of response.Failed ?? []) {
                  const entry = chunk[Number(failed.Id)];
                  if (entry !== undefined) refused.add(entry.messageId);
                }
              },
              () => {
                for (const c of chunk) refused.add(c.messageId);
              },
            ),
        );
      }
    }
    await Promise.all(requests);
    return refused;
  }
}

/** What `backOffRedeliveries` did, for the summary and tests. */
export interface RedeliveryBackoffReport {
  /** Records whose visibility was asked to change. */
  readonly requested: number;
  /** Of those, the ones not changed (they are redelivered after the queue's visibility timeout). */
  readonly notChanged: number;
}

/**
 * Gives every record the response returns to SQS a visibility timeout from its receive count, so a
 * throttled record is retried in seconds, not after the queue's timeout. Bounded by `signal` (the
 * invocation's settle budget) even if the port ignores it; any failure is logged and changes no record's
 * outcome: those records are still returned in `batchItemFailures` and are redelivered, just later.
 */
export async function backOffRedeliveries(
  records: readonly SQSRecord[],
  failures: readonly SQSBatchItemFailure[],
  port: VisibilityPort,
  context: {
    signal: AbortSignal;
    logger: Logger;
    backoff?: RedeliveryBackoffOptions;
    /**
     * Whether a record is redelivered only because its prefix's permits were all held until the cutoff
     * (it gets the short `turnSeconds` backoff); an unreachable DynamoDB is not waiting for a turn.
     */
    waitedForTurn?: (messageId: string) => boolean;
  },
): Promise<RedeliveryBackoffReport> {
  const failed = new Set(failures.map((f) => f.itemIdentifier));
  const changes: VisibilityChange[] = [];
  for (const record of records) {
    if (!failed.has(record.messageId) || record.receiptHandle === '') continue;
    const queueUrl = queueUrlOf(record.eventSourceARN);
    if (queueUrl === undefined) continue;
    changes.push({
      queueUrl,
      messageId: record.messageId,
      receiptHandle: record.receiptHandle,
      visibilityTimeoutSeconds: visibilityTimeoutFor(
        Number(record.attributes.ApproximateReceiveCount),
        context.backoff,
        context.waitedForTurn?.(record.messageId) === true,
      ),
    });
  }
  if (changes.length === 0) return { requested: 0, notChanged: 0 };
  try {
    const sent = port.change(changes, { signal: context.signal });
    const refused = await Promise.race([sent, rejectOnAbort(context.signal)]);
    if (refused.size > 0) {
      context.logger.warn(
        'redelivery backoff: some visibility changes refused; those records wait out the queue timeout',
        {
          refused: refused.size,
        },
      );
    }
    return { requested: changes.length, notChanged: refused.size };
  } catch (error) {
    context.logger.warn('redelivery backoff failed: records wait out the queue timeout; outcomes unchanged', {
      error,
      records: changes.length,
    });
    return { requested: changes.length, notChanged: changes.length };
  }
}
