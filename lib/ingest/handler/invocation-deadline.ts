import { setMaxListeners } from 'node:events';
import type { Clock } from './clock.js';
import { InvocationDeadlineReachedError, SettleBudgetSpentError } from './errors.js';

/**
 * The cutoff of one invocation: `start + remaining - margin`. Its signal aborts at the cutoff (at once when
 * the cutoff has already passed) and goes to every write and to the slot bookings. The settle signal
 * aborts `settleMs` later (part of the margin): it bounds what must still happen after the cutoff, the
 * dead-letter send, so a batch cut short still stores its permanent failures, yet answers before Lambda's
 * timeout.
 */
export class InvocationDeadline {
  /** Epoch ms after which no write starts. */
  readonly cutoff: number;
  readonly #controller = new AbortController();
  readonly #settle = new AbortController();
  readonly #cancel: () => void;
  readonly #cancelSettle: () => void;

  constructor(clock: Clock, startedAt: number, remainingMs: number, marginMs: number, settleMs = 0) {
    this.cutoff = startedAt + remainingMs - marginMs;
    // Every queued or running write listens to the deadline: hundreds of listeners are expected, not a leak.
    setMaxListeners(0, this.#controller.signal);
    const reach = () => this.#controller.abort(new InvocationDeadlineReachedError());
    // Already inside the margin: abort now, not on a timer tick, which would fire only after the writes
    // had been started (they start synchronously once slots are booked).
    if (this.cutoff <= startedAt) reach();
    this.#cancel = clock.schedule(Math.max(0, this.cutoff - startedAt), reach);
    const spent = () => this.#settle.abort(new SettleBudgetSpentError());
    const settleIn = this.cutoff + settleMs - startedAt;
    if (settleIn <= 0) spent();
    this.#cancelSettle = clock.schedule(Math.max(0, settleIn), spent);
  }

  /** Aborts `settleMs` after the cutoff: bounds the dead-letter send. */
  get settleSignal(): AbortSignal {
    return this.#settle.signal;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get reached(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Stops the timer (the invocation is over). */
  dispose(): void {
    this.#cancel();
    this.#cancelSettle();
  }
}
