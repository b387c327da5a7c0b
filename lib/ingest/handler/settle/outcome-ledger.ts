import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { OutcomeAlreadySettledError, UnknownRecordError } from '../errors.js';
import { messageGroupOf } from '../plan/message-group.js';
import type { TransientCause, WriteOutcome } from '../run/write-outcome.js';
import { type DeadLetter, letterSourceOf } from './dead-letter-queue.js';
import type { DeadLetterReason } from './dead-letter-reason.js';

/**
 * Where a record stands. `written`, `dead-lettered`, `deferred` and `redeliver` are final; `refused` (a
 * permanent failure) waits for the DLQ and becomes `dead-lettered`, or `redeliver` when the DLQ does not
 * take it; `reporting` (written, refusing updates acknowledged earlier) waits for the DLQ to take their
 * letters and becomes `written`, or `redeliver` when it does not take them all; `out-of-turn` (its prefix's permits were not to be had in time) waits for the deferral port and
 * becomes `deferred` (a copy is in its queue), or `redeliver` (cause `permits-unavailable`).
 */
export type RecordFate =
  | { readonly state: 'written' }
  | { readonly state: 'reporting'; readonly letters: readonly DeadLetter[] }
  | { readonly state: 'out-of-turn'; readonly error: unknown }
  | { readonly state: 'deferred' }
  | { readonly state: 'refused'; readonly reason: DeadLetterReason; readonly error: Error }
  | { readonly state: 'dead-lettered'; readonly reason: DeadLetterReason; readonly error: Error }
  | { readonly state: 'redeliver'; readonly cause: TransientCause; readonly error: unknown };

interface Entry {
  readonly record: SQSRecord;
  tenant: string | undefined;
  fate: RecordFate | undefined;
  /** `reporting`: the ids of its letters the DLQ has not taken yet. */
  unstored?: Set<string>;
}

/** What the batch came to, for metrics and the summary. */
export interface LedgerCounts {
  readonly written: number;
  readonly deadLettered: number;
  /** Re-sent to their queue as new messages (acknowledged; their copies carry the writes). */
  readonly deferred: number;
  /** Records SQS must redeliver: `redeliver`, still `refused` or `out-of-turn`, or never reached. */
  readonly redelivered: number;
  /**
   * `redelivered` split by cause (adds up to it). A record no stage reached counts as `unexpected` (a bug
   * of ours left it), one still waiting for the DLQ as `dead-letter-failed`, one still out of turn as
   * `permits-unavailable`.
   */
  readonly redeliveredByCause: ReadonlyMap<TransientCause, number>;
  /** `deadLettered` split by the letter's reason (adds up to it). */
  readonly deadLetteredByReason: ReadonlyMap<DeadLetterReason, number>;
}

/**
 * The fate of every record of one SQS batch, owned in one place. Each record gets at most one final
 * outcome and a final outcome never changes: a second `settle` throws `OutcomeAlreadySettledError` and
 * leaves the first in place. The response acknowledges only what is `written`, `dead-lettered` or
 * `deferred`; every other record, including one no stage reached, is redelivered by construction.
 */
export class OutcomeLedger {
  readonly #entries = new Map<string, Entry>();
  readonly #order: Entry[] = [];
  /** The record reporting each letter of a refused earlier update, by the letter's message id. */
  readonly #reporters = new Map<string, Entry>();

  constructor(records: readonly SQSRecord[]) {
    for (const record of records) {
      // SQS message ids are unique within a batch; a repeated one shares its entry (and its fate).
      if (this.#entries.has(record.messageId)) continue;
      const entry: Entry = { record, tenant: undefined, fate: undefined };
      this.#entries.set(record.messageId, entry);
      this.#order.push(entry);
    }
  }

  /** The record's fate so far (`undefined`: no stage reached it). */
  fateOf(messageId: string): RecordFate | undefined {
    return this.#entry(messageId).fate;
  }

  /**
   * Records what became of a record: `written` and `transient` are final, `permanent` queues it for the
   * DLQ (`tenant` goes into the letter), `written` with refused updates queues their letters. Throws
   * `OutcomeAlreadySettledError` when the record has a fate.
   */
  settle(messageId: string, outcome: WriteOutcome, tenant?: string): void {
    const entry = this.#entry(messageId);
    const fate = this.#fateOf(outcome);
    if (entry.fate !== undefined)
      throw new OutcomeAlreadySettledError(messageId, entry.fate.state, fate.state);
    entry.fate = fate;
    entry.tenant = tenant;
    if (fate.state !== 'reporting') return;
    entry.unstored = new Set(fate.letters.map((l) => l.messageId));
    for (const letter of fate.letters) this.#reporters.set(letter.messageId, entry);
  }

  #fateOf(outcome: WriteOutcome): RecordFate {
    if (outcome.kind !== 'written' || outcome.refused === undefined) return fateOf(outcome);
    // A letter of a record in this batch would share its id: that record reports its own outcome.
    const letters = outcome.refused.filter(
      (l) => !this.#entries.has(l.messageId) && !this.#reporters.has(l.messageId),
    );
    return letters.length === 0 ? { state: 'written' } : { state: 'reporting', letters };
  }

  /**
   * Permanent failures waiting for the DLQ, as letters (the original body, verbatim, plus why), then the
   * letters of earlier updates refused by records written in this batch.
   */
  pendingLetters(): DeadLetter[] {
    const letters: DeadLetter[] = [];
    for (const { record, tenant, fate } of this.#order) {
      if (fate?.state === 'reporting') {
        const messageGroupId = messageGroupOf(record);
        // The refused update's message is gone; it came for the same tenant, so through the same producer's
        // queue as its reporter. Its body carries its `seq`: a redrive needs no origin send time to order it.
        const reporterSource = letterSourceOf(record);
        for (const letter of fate.letters) {
          const source = {
            originId: letter.messageId,
            originSentAt: undefined,
            sourceArn: reporterSource.sourceArn,
          };
          letters.push({ ...letter, source, ...(messageGroupId === undefined ? {} : { messageGroupId }) });
        }
      }
      if (fate?.state !== 'refused') continue;
      const messageGroupId = messageGroupOf(record);
      letters.push({
        messageId: record.messageId,
        body: record.body,
        reason: fate.reason,
        errorName: fate.error.name,
        detail: fate.error.message,
        ...(tenant === undefined ? {} : { tenant }),
        ...(messageGroupId === undefined ? {} : { messageGroupId }),
        source: letterSourceOf(record),
      });
    }
    return letters;
  }

  /**
   * The DLQ took the letter: final, acknowledged. For the letter of a refused earlier update, its reporter
   * is final and acknowledged (`written`) once the DLQ took all of its letters.
   */
  deadLettered(messageId: string): void {
    const reporter = this.#reporters.get(messageId);
    if (reporter !== undefined) {
      reporter.unstored?.delete(messageId);
      if (reporter.fate?.state === 'reporting' && reporter.unstored?.size === 0)
        reporter.fate = { state: 'written' };
      return;
    }
    const { entry, fate } = this.#pending(messageId, 'refused', 'dead-lettered');
    entry.fate = { state: 'dead-lettered', reason: fate.reason, error: fate.error };
  }

  /**
   * The DLQ did not take the letter: final, redelivered (SQS's redrive policy still moves it eventually).
   * For the letter of a refused earlier update, its reporter is redelivered, and reports it again then.
   */
  deadLetterFailed(messageId: string, error?: unknown): void {
    const reporter = this.#reporters.get(messageId);
    const entry = reporter ?? this.#pending(messageId, 'refused', 'redeliver').entry;
    if (reporter !== undefined && reporter.fate?.state !== 'reporting') return;
    entry.fate = { state: 'redeliver', cause: 'dead-letter-failed', error };
  }

  /**
   * A refused record whose letter must not be sent now (an earlier message of its FIFO group is
   * redelivered): final, redelivered with `cause`, so SQS hands the group back in order.
   */
  withholdLetter(messageId: string, cause: TransientCause, error?: unknown): void {
    const { entry } = this.#pending(messageId, 'refused', 'redeliver');
    entry.fate = { state: 'redeliver', cause, error };
  }

  /** Records out of turn, waiting for the deferral port, in batch order, with why (`SemaphoreTimeoutError`). */
  pendingDeferrals(): { readonly record: SQSRecord; readonly error: unknown }[] {
    const pending: { record: SQSRecord; error: unknown }[] = [];
    for (const { record, fate } of this.#order) {
      if (fate?.state === 'out-of-turn') pending.push({ record, error: fate.error });
    }
    return pending;
  }

  /** A copy of the out-of-turn record is in its queue: final, acknowledged. */
  deferred(messageId: string): void {
    this.#pending(messageId, 'out-of-turn', 'deferred').entry.fate = { state: 'deferred' };
  }

  /** The out-of-turn record could not be deferred: final, redelivered (`permits-unavailable`). */
  notDeferred(messageId: string): void {
    const { entry, fate } = this.#pending(messageId, 'out-of-turn', 'redeliver');
    entry.fate = { state: 'redeliver', cause: 'permits-unavailable', error: fate.error };
  }

  /** The batch's records in order (one entry per message id) with their fates so far. */
  *records(): IterableIterator<{ readonly record: SQSRecord; readonly fate: RecordFate | undefined }> {
    for (const { record, fate } of this.#order) yield { record, fate };
  }

  counts(): LedgerCounts {
    let written = 0;
    let deferred = 0;
    const redeliveredByCause = new Map<TransientCause, number>();
    const deadLetteredByReason = new Map<DeadLetterReason, number>();
    const add = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);
    for (const { fate } of this.#order) {
      if (fate === undefined) add(redeliveredByCause, 'unexpected');
      else if (fate.state === 'written') written++;
      else if (fate.state === 'dead-lettered') add(deadLetteredByReason, fate.reason);
      else if (fate.state === 'deferred') deferred++;
      else if (fate.state === 'redeliver') add(redeliveredByCause, fate.cause);
      else if (fate.state === 'out-of-turn') add(redeliveredByCause, 'permits-unavailable');
      else add(redeliveredByCause, 'dead-letter-failed');
    }
    const deadLettered = sum(deadLetteredByReason);
    return {
      written,
      deadLettered,
      deferred,
      redelivered: this.#order.length - written - deadLettered - deferred,
      redeliveredByCause,
      deadLetteredByReason,
    };
  }

  /** `batchItemFailures`: every record not `written`, `dead-lettered` or `deferred`, in batch order. */
  response(): SQSBatchResponse {
    const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
    for (const { record, fate } of this.#order) {
      const state = fate?.state;
      if (state === 'written' || state === 'dead-lettered' || state === 'deferred') continue;
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
    return { batchItemFailures };
  }

  #entry(messageId: string): Entry {
    const entry = this.#entries.get(messageId);
    if (entry === undefined) throw new UnknownRecordError(messageId);
    return entry;
  }

  /**
   * The entry of a record in a pending state (`refused`: waiting for the DLQ; `out-of-turn`: waiting for the
   * deferral port); anything else has nothing of that kind to settle.
   */
  #pending<S extends 'refused' | 'out-of-turn'>(
    messageId: string,
    state: S,
    next: string,
  ): { entry: Entry; fate: Extract<RecordFate, { state: S }> } {
    const entry = this.#entry(messageId);
    const fate = entry.fate;
    if (fate?.state !== state) {
      throw new OutcomeAlreadySettledError(messageId, fate?.state ?? 'unsettled', next);
    }
    return { entry, fate: fate as Extract<RecordFate, { state: S }> };
  }
}

function sum(counts: ReadonlyMap<unknown, number>): number {
  let total = 0;
  for (const n of counts.values()) total += n;
  return total;
}

function fateOf(outcome: WriteOutcome): RecordFate {
  switch (outcome.kind) {
    case 'written':
      return { state: 'written' };
    case 'permanent':
      return { state: 'refused', reason: outcome.reason, error: outcome.error };
    case 'transient':
      return { state: 'redeliver', cause: outcome.cause, error: outcome.error };
    case 'out-of-turn':
      return { state: 'out-of-turn', error: outcome.error };
  }
}
