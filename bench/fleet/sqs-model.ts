// SQS (standard queue) and Lambda's SQS event source mapping, modelled on simulated time.
//
// What it encodes (AWS Lambda and SQS developer guides, retrieved 2026-11):
// - The event source mapping invokes with up to `BatchSize` records (<= 10,000), waiting up to
//   `MaximumBatchingWindowInSeconds` to fill a batch; at most `MaximumConcurrency` (2..1,000) invocations
//   run at once ("Using Lambda with Amazon SQS"). Scaling up is modelled as already done (the queue has been
//   busy); AWS adds up to 300 concurrent invocations per minute from cold, a ramp a burst from idle pays.
// - A received message stays invisible for the visibility timeout; a record the function lists in
//   `batchItemFailures` (or every record of a failed or timed-out invocation) becomes visible again when it
//   expires (the project's stack sets it to 6 x the function timeout + the batching window). On the receive
//   that would exceed `maxReceiveCount`, SQS's redrive policy moves the message to the DLQ instead.
// - Standard queues deliver at least once: a configurable share of receives leaves a copy visible, which
//   is delivered again (possibly to another invocation at the same time).
// - ChangeMessageVisibility (the handler's redelivery backoff) makes an in-flight message reappear after
//   the given timeout, counted from the change; only the latest receive's receipt handle is accepted.
// - SendMessageBatch to the queue itself (the handler's deferred records, issue 16) enqueues each entry as a
//   NEW message: its own message id, receive count 1, visible after its `DelaySeconds`, carrying its message
//   attributes into the records it is delivered in. Its data's fate follows its origin (`defer`).
// - Requests are billed per 64 KB chunk of payload: a ReceiveMessage returns at most 10 messages, a
//   DeleteMessageBatch and SendMessageBatch take at most 10 entries ("Amazon SQS pricing").
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';

export interface EventSourceOptions {
  batchSize: number;
  batchingWindowMs: number;
  maximumConcurrency: number;
  visibilityTimeoutMs: number;
  maxReceiveCount: number;
  /** Share (0..1) of receives that also leave a copy visible (at-least-once duplicates). */
  duplicateRate: number;
}

/** Final fate of a message: not yet, written (acknowledged), dead-lettered by the handler, or by the redrive policy. */
export const PENDING = 0;
export const ACKED = 1;
export const DEAD_LETTERED = 2;
export const REDRIVEN = 3;

export interface QueueCounters {
  sendRequests: number;
  receiveRequests: number;
  deleteRequests: number;
  dlqSendRequests: number;
  /** GetQueueAttributes and ChangeMessageVisibilityBatch requests (the handler's redelivery backoff). */
  visibilityRequests: number;
  /** Visibility changes applied (a failed record then reappears after its backoff, not the queue's timeout). */
  visibilityChanges: number;
  /** Deliveries after the first of a message (failed or timed-out records, and duplicates). */
  redeliveries: number;
  duplicates: number;
  /** Records acknowledged for a message that was already final (a duplicate written twice: harmless). */
  duplicateAcks: number;
  payloadBytesSent: number;
  /** Deferred copies sent (SendMessageBatch entries to the queue itself), and the requests they took. */
  deferrals: number;
  deferralSendRequests: number;
  /** Deliveries acknowledged because their record was deferred (their origin's fate waits for a copy). */
  deferredAcks: number;
}

/**
 * Builds the SQS record of delivery `receive` of message `index` (an origin, or a deferred copy of origin
 * `origin` carrying `attributes`, Lambda's event format), sent at `sentAt`.
 */
export type RecordFactory = (
  index: number,
  receive: number,
  sentAt: number,
  origin: number,
  attributes: SQSMessageAttributes | undefined,
) => SQSRecord;

/**
 * The queue's state in typed arrays (a million messages cost a few MB), a FIFO of visible copies, and the
 * event source's dispatch loop. `invoke` is the function, given the records, their message indices and
 * receives; it resolves to the failed message indices, or rejects for a failed invocation (every record
 * comes back).
 */
export class QueueWithEventSource {
  /** Per origin message (0..messages-1): its data's fate, sent time and when the fate became final. */
  readonly state: Uint8Array;
  readonly sentAt: Float64Array;
  readonly ackedAt: Float64Array;
  // Per SQS message, origins first then deferred copies (grown as copies are sent): its receives, its
  // origin, its own send time, when a ChangeMessageVisibility during the current receive makes it reappear
  // (0: none), whether a failed delivery's redelivery is due (0: no, 1: scheduled, 2: visible again;
  // until its next receive) and which schedule of it counts, and whether it was deleted (acknowledged) or
  // redriven.
  #receives: Uint16Array;
  #origin: Int32Array;
  #ownSentAt: Float64Array;
  #visibleAt: Float64Array;
  #due: Uint8Array;
  #dueSchedule: Uint32Array;
  #gone: Uint8Array;
  #total: number;
  readonly #attributes = new Map<number, SQSMessageAttributes>();
  /**
   * Deliveries (`deliveryKey`: a message's index and receive, as its receipt handle) a deferred copy was
   * charged to: their invocation's acknowledgement of that message does not settle its origin. Keyed by
   * delivery, not message: a standard queue's duplicate puts one message in flight twice, in one
   * invocation or two, and each invocation that defers it sends its own copy (finding 6 of
   * docs/fleet-simulation.md: keyed by message, two charges made one entry and an acknowledgement of a
   * deferred message was taken for a write).
   */
  readonly #deferredDeliveries = new Set<number>();
  readonly counters: QueueCounters = {
    sendRequests: 0,
    receiveRequests: 0,
    deleteRequests: 0,
    dlqSendRequests: 0,
    visibilityRequests: 0,
    visibilityChanges: 0,
    redeliveries: 0,
    duplicates: 0,
    duplicateAcks: 0,
    payloadBytesSent: 0,
    deferrals: 0,
    deferralSendRequests: 0,
    deferredAcks: 0,
  };
  /** Messages the handler's dead-letter sends took: final as dead-lettered once acknowledged. */
  readonly deadLettered = new Set<number>();
  #visible: number[] = [];
  #head = 0;
  #sent = 0;
  #running = 0;
  #windowTimer: ReturnType<typeof setTimeout> | undefined;
  #waitingSince: number | undefined;
  #settled = 0;
  #onSettled: (() => void) | undefined;

  constructor(
    readonly messages: number,
    private readonly options: EventSourceOptions,
    private readonly random: () => number,
    private readonly makeRecord: RecordFactory,
    private readonly invoke: (
      records: SQSRecord[],
      indices: number[],
      receives: readonly number[],
    ) => Promise<Set<number>>,
    private readonly bodyBytes: (index: number) => number,
  ) {
    this.state = new Uint8Array(messages);
    this.sentAt = new Float64Array(messages);
    this.ackedAt = new Float64Array(messages);
    this.#receives = new Uint16Array(messages);
    this.#origin = Int32Array.from({ length: messages }, (_, i) => i);
    this.#ownSentAt = this.sentAt;
    this.#visibleAt = new Float64Array(messages);
    this.#due = new Uint8Array(messages);
    this.#dueSchedule = new Uint32Array(messages);
    this.#gone = new Uint8Array(messages);
    this.#total = messages;
  }

  /** Receives so far of SQS message `index` (an origin or a copy). */
  receivesOf(index: number): number {
    return this.#receives[index] ?? 0;
  }

  /** The origin message whose data SQS message `index` carries (itself for an origin). */
  originOf(index: number): number {
    return this.#origin[index] ?? -1;
  }

  /** SQS messages sent so far: origins, then deferred copies. */
  get total(): number {
    return this.#total;
  }

  /**
   * The handler deferred the record of message `index`, received as its `receive`th receive
   * (SendMessageBatch to this queue): a new message, receive count 1, visible after `delaySeconds`, with
   * `attributes` (Lambda's event format). When the invocation of that delivery acknowledges the message
   * (every record of it in that batch: the handler keeps one fate per message id), its origin's fate is
   * left to the copy (written once any copy is written). Returns the copy's index.
   */
  defer(index: number, delaySeconds: number, attributes: SQSMessageAttributes, receive: number): number {
    this.#deferredDeliveries.add(deliveryKey(index, receive));
    if (this.#total === this.#receives.length) this.#grow();
    const copy = this.#total++;
    this.#origin[copy] = this.#origin[index]!;
    this.#ownSentAt[copy] = Date.now();
    this.#attributes.set(copy, attributes);
    this.counters.deferrals += 1;
    setTimeout(() => {
      this.#visible.push(copy);
      this.pump();
    }, Math.max(0, delaySeconds) * 1000);
    return copy;
  }

  #grow(): void {
    const size = Math.max(1024, this.#receives.length * 2);
    const grown = <T extends Uint16Array | Uint32Array | Int32Array | Float64Array | Uint8Array>(
      from: T,
      to: T,
    ): T => {
      to.set(from);
      return to;
    };
    this.#receives = grown(this.#receives, new Uint16Array(size));
    this.#origin = grown(this.#origin, new Int32Array(size));
    this.#ownSentAt = grown(this.#ownSentAt, new Float64Array(size));
    this.#visibleAt = grown(this.#visibleAt, new Float64Array(size));
    this.#due = grown(this.#due, new Uint8Array(size));
    this.#dueSchedule = grown(this.#dueSchedule, new Uint32Array(size));
    this.#gone = grown(this.#gone, new Uint8Array(size));
  }

  /**
   * ChangeMessageVisibility: the receipt handle `<index>.<receive>` of the message's latest receive, while
   * it is in flight, makes it reappear `seconds` from now instead of after the queue's visibility timeout.
   * `false` for a stale or unknown handle (SQS refuses those).
   */
  changeVisibility(receiptHandle: string, seconds: number): boolean {
    const [index, receive] = receiptHandle.split('.').map(Number);
    if (index === undefined || receive === undefined || !(index >= 0 && index < this.#total)) return false;
    if (this.#receives[index] !== receive || this.#gone[index] === 1) return false;
    if (this.state[this.#origin[index]!] !== PENDING) return false;
    this.#visibleAt[index] = Date.now() + Math.max(0, seconds) * 1000;
    this.counters.visibilityChanges += 1;
    return true;
  }

  /** Messages whose fate is final (acknowledged or dead-lettered). */
  get settled(): number {
    return this.#settled;
  }

  get running(): number {
    return this.#running;
  }

  get backlog(): number {
    return this.#visible.length - this.#head;
  }

  /** Resolves when every message is final. */
  whenSettled(): Promise<void> {
    if (this.#settled === this.messages) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onSettled = resolve;
    });
  }

  /** The producer: sends the next `n` messages now (SendMessageBatch of up to 10). */
  send(n: number): void {
    const to = Math.min(this.messages, this.#sent + n);
    const now = Date.now();
    let bytes = 0;
    for (let i = this.#sent; i < to; i++) {
      this.sentAt[i] = now;
      this.#ownSentAt[i] = now;
      this.#visible.push(i);
      bytes += this.bodyBytes(i);
    }
    this.counters.sendRequests += chunks(to - this.#sent, bytes);
    this.counters.payloadBytesSent += bytes;
    this.#sent = to;
    this.pump();
  }

  get sent(): number {
    return this.#sent;
  }

  /** Starts as many invocations as the concurrency cap, the backlog and the batching window allow. */
  pump(): void {
    while (this.#running < this.options.maximumConcurrency && this.backlog > 0) {
      if (this.backlog < this.options.batchSize && this.options.batchingWindowMs > 0) {
        const now = Date.now();
        this.#waitingSince ??= now;
        if (now - this.#waitingSince < this.options.batchingWindowMs) {
          this.#windowTimer ??= setTimeout(
            () => {
              this.#windowTimer = undefined;
              this.pump();
            },
            this.options.batchingWindowMs - (now - this.#waitingSince),
          );
          return;
        }
      }
      this.#waitingSince = undefined;
      this.#dispatch();
    }
  }

  #takeVisible(): number | undefined {
    if (this.#head >= this.#visible.length) return undefined;
    const index = this.#visible[this.#head++]!;
    if (this.#head > 65_536 && this.#head * 2 > this.#visible.length) {
      this.#visible = this.#visible.slice(this.#head);
      this.#head = 0;
    }
    return index;
  }

  #dispatch(): void {
    const indices: number[] = [];
    const receives: number[] = [];
    const records: SQSRecord[] = [];
    let bytes = 0;
    while (indices.length < this.options.batchSize) {
      const index = this.#takeVisible();
      if (index === undefined) break;
      // A copy of a message already final (a duplicate, or a redelivery raced by its duplicate) is
      // still delivered by SQS: it counts, and the handler must treat it idempotently.
      const receive = ++this.#receives[index]!;
      const origin = this.#origin[index]!;
      if (receive > this.options.maxReceiveCount && this.state[origin] === PENDING) {
        this.#gone[index] = 1;
        this.#finish(origin, REDRIVEN);
        continue;
      }
      if (receive > 1) this.counters.redeliveries += 1;
      this.#visibleAt[index] = 0;
      this.#due[index] = 0;
      // Only a first receive leaves a copy behind (a copy of a copy would make the rate compound).
      if (receive === 1 && this.random() < this.options.duplicateRate) {
        this.counters.duplicates += 1;
        this.#visible.push(index);
      }
      indices.push(index);
      receives.push(receive);
      const attributes = this.#attributes.get(index);
      records.push(this.makeRecord(index, receive, this.#ownSentAt[index]!, origin, attributes));
      bytes += this.bodyBytes(origin) + (attributes === undefined ? 0 : attributeBytes(attributes));
    }
    if (indices.length === 0) return;
    // A ReceiveMessage returns at most 10 messages.
    this.counters.receiveRequests += Math.max(Math.ceil(indices.length / 10), chunks(1, bytes));
    this.#running += 1;
    const receivedAt = Date.now();
    this.invoke(records, indices, receives)
      .catch(() => new Set(indices))
      .then((failed) => {
        // The messages this invocation deferred: a copy charged to any of a message's deliveries in the
        // batch covers them all (one fate per message id). A record returned in batchItemFailures was not
        // deferred, whatever its copy became.
        const deferred = new Set<number>();
        for (let i = 0; i < indices.length; i++) {
          if (this.#deferredDeliveries.delete(deliveryKey(indices[i]!, receives[i]!)))
            deferred.add(indices[i]!);
        }
        let acked = 0;
        for (const [i, index] of indices.entries()) {
          const origin = this.#origin[index]!;
          if (failed.has(index)) {
            // SQS makes a message visible once, when its latest receive's visibility ends: a second
            // failed delivery of it (a duplicate's) while its redelivery is due schedules no second one
            // (that put one message twice in a batch), but the latest receive's failure sets the time
            // (its ChangeMessageVisibility is the one SQS applied; an earlier receive's was refused).
            const due = this.#due[index]!;
            const latest = receives[i] === this.#receives[index];
            if (
              this.state[origin] === PENDING &&
              this.#gone[index] === 0 &&
              (due === 0 || (due === 1 && latest))
            ) {
              const changed = this.#visibleAt[index]!;
              this.#redeliverAt(index, changed > 0 ? changed : receivedAt + this.options.visibilityTimeoutMs);
            }
            continue;
          }
          acked += 1;
          this.#gone[index] = 1;
          if (deferred.has(index)) {
            this.counters.deferredAcks += 1;
            continue;
          }
          if (this.state[origin] === PENDING) {
            this.#finish(origin, this.deadLettered.has(index) ? DEAD_LETTERED : ACKED);
          } else this.counters.duplicateAcks += 1;
        }
        this.counters.deleteRequests += Math.ceil(acked / 10);
        this.#running -= 1;
        this.pump();
      });
  }

  #redeliverAt(index: number, at: number): void {
    this.#due[index] = 1;
    const schedule = ++this.#dueSchedule[index]!;
    setTimeout(
      () => {
        // A later schedule of the same message (its latest receive's failure) replaced this one.
        if (this.#dueSchedule[index] !== schedule) return;
        if (this.state[this.#origin[index]!] !== PENDING || this.#gone[index] === 1) return;
        this.#due[index] = 2;
        this.#visible.push(index);
        this.pump();
      },
      Math.max(0, at - Date.now()),
    );
  }

  #finish(index: number, fate: number): void {
    this.state[index] = fate;
    this.ackedAt[index] = Date.now();
    this.#settled += 1;
    if (this.#settled === this.messages) this.#onSettled?.();
  }
}

/** A delivery's key: the message's index and its receive (at most 65,535: a Uint16Array's), as one number. */
function deliveryKey(index: number, receive: number): number {
  return index * 65_536 + receive;
}

/** What SQS counts of a message's attributes: each one's name, type and value. */
export function attributeBytes(attributes: SQSMessageAttributes): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(attributes)) {
    bytes += name.length + value.dataType.length + (value.stringValue?.length ?? 0);
    if (value.binaryValue !== undefined) bytes += Math.floor((value.binaryValue.length * 3) / 4);
  }
  return bytes;
}

/** SQS bills each 64 KB chunk of a request's payload as one request. */
export function chunks(requests: number, bytes: number): number {
  return Math.max(requests === 0 ? 0 : 1, Math.ceil(requests / 10), Math.ceil(bytes / 65_536));
}
