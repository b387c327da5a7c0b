import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { SQS_LIMITS } from '../../aws/sqs-limits.js';
import type { Clock } from './clock.js';
import type { LetterCopy } from './letter-copy.js';

/** A FIFO copy of a letter without a group goes to this one. */
export const REDRIVE_GROUP_ID = 'redrive';

/** One copy to send: the letter it stands for (its id deduplicates FIFO sends) and where it goes. */
export interface OutgoingCopy {
  /** The letter's message id (or an export line's): a FIFO destination deduplicates by it. */
  readonly key: string;
  readonly queueUrl: string;
  readonly copy: LetterCopy;
}

/** A copy the destination did not take, and what it said. */
export interface RefusedCopy {
  readonly outgoing: OutgoingCopy;
  readonly why: string;
}

/** Spaces sends so that no more than `perSecond` copies leave in any second since the first. */
export class Pacer {
  #started: number | undefined;
  #sent = 0;

  constructor(
    private readonly perSecond: number,
    private readonly clock: Clock,
  ) {}

  async take(n: number): Promise<void> {
    const now = this.clock.now();
    this.#started ??= now;
    const due = this.#started + (this.#sent / this.perSecond) * 1000;
    if (due > now) await this.clock.sleep(due - now);
    this.#sent += n;
  }
}

function entryOf(outgoing: OutgoingCopy, index: number): SendMessageBatchRequestEntry {
  const { copy } = outgoing;
  return {
    Id: String(index),
    MessageBody: copy.body,
    MessageAttributes: copy.attributes,
    ...(outgoing.queueUrl.endsWith('.fifo')
      ? { MessageGroupId: copy.groupId ?? REDRIVE_GROUP_ID, MessageDeduplicationId: outgoing.key }
      : {}),
  };
}

/**
 * Sends copies with `SendMessageBatch`, at most `perSecond` a second (batches of up to 10, fewer under a
 * rate below 10), each batch to one queue. A copy is taken only when SQS lists it as `Successful`: one
 * it lists in `Failed`, in neither list, or whose request failed is refused (and may not be deleted from
 * where it came from).
 */
export class CopySender {
  readonly #pacer: Pacer;
  readonly #batch: number;

  constructor(
    private readonly sqs: SQSClient,
    perSecond: number,
    clock: Clock,
  ) {
    this.#pacer = new Pacer(perSecond, clock);
    this.#batch = Math.max(1, Math.min(SQS_LIMITS.batchEntries, Math.floor(perSecond)));
  }

  /** Sends `copies`; resolves the ones taken and the ones refused. */
  async send(copies: readonly OutgoingCopy[]): Promise<{ taken: OutgoingCopy[]; refused: RefusedCopy[] }> {
    const taken: OutgoingCopy[] = [];
    const refused: RefusedCopy[] = [];
    const byQueue = new Map<string, OutgoingCopy[]>();
    for (const c of copies) byQueue.set(c.queueUrl, [...(byQueue.get(c.queueUrl) ?? []), c]);
    for (const [queueUrl, queued] of byQueue) {
      for (let i = 0; i < queued.length; i += this.#batch) {
        const chunk = queued.slice(i, i + this.#batch);
        await this.#pacer.take(chunk.length);
        let answer: SendMessageBatchCommandOutput;
        try {
          answer = await this.sqs.send(
            new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: chunk.map(entryOf) }),
          );
        } catch (error) {
          const e = error as { name?: string; message?: string };
          for (const outgoing of chunk) refused.push({ outgoing, why: `${e.name}: ${e.message}` });
          continue;
        }
        const ok = new Set((answer.Successful ?? []).map((s) => s.Id));
        const failed = new Map((answer.Failed ?? []).map((f) => [f.Id, `${f.Code}: ${f.Message ?? ''}`]));
        chunk.forEach((outgoing, index) => {
          if (ok.has(String(index))) taken.push(outgoing);
          else refused.push({ outgoing, why: failed.get(String(index)) ?? 'not listed by SQS' });
        });
      }
    }
    return { taken, refused };
  }
}
