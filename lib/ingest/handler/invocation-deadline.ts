import { setMaxListeners } from 'node:events';
import type { Clock } from './clock.js';

/** The error an invocation's deadline signal aborts with. */
export const DEADLINE_REACHED_MESSAGE = 'invocation deadline margin reached';

/**
 * The cutoff of one invocation: `start + remaining - margin`. Its signal aborts at the cutoff (at once when
 * the cutoff has already passed) and goes to every write and to the permit acquisition.
 */
export class InvocationDeadline {
  /** Epoch ms after which no write starts. */
  readonly cutoff: number;
  readonly #controller = new AbortController();
  readonly #cancel: () => void;

  constructor(clock: Clock, startedAt: number, remainingMs: number, marginMs: number) {
    this.cutoff = startedAt + remainingMs - marginMs;
    // Every queued or running write listens to the deadline: hundreds of listeners are expected, not a leak.
    setMaxListeners(0, this.#controller.signal);
    const reach = () => this.#controller.abort(new Error(DEADLINE_REACHED_MESSAGE));
    // Already inside the margin: abort now, not on a timer tick, which would fire only after the writes
    // had been started (they start synchronously once permits are held).
    if (this.cutoff <= startedAt) reach();
    this.#cancel = clock.schedule(Math.max(0, this.cutoff - startedAt), reach);
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
  }
}
