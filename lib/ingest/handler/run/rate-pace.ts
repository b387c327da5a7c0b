import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import { nextRate, overloaded } from '../../../semaphore/rate-law.js';

/** What a holder's pace steers (`ExecutorPool` fits): the least ms between two paced starts. */
export interface PacedTarget {
  setStartInterval(ms: number): void;
}

/** The pool events a pace counts refusals from (`ExecutorPool` fits). */
export interface RefusalEvents {
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
}

/**
 * A holder's pace inside one lease (docs/fleet-cap.md, "Watch"): its writes start at its rate, and the
 * control law cuts that rate once per round, a round being the writes sent since the last cut. A refusal
 * of a write that started before the last cut belongs to the round that cut already (its answer was on its
 * way), so it is not counted again. The rate never rises within a lease, and the budget never hears of the
 * cuts: it moves at release by the whole lease's share refused, so a round of a few writes cannot drag
 * the fleet's budget down.
 */
export class RatePace {
  #rate: number;
  #cutAt: number;
  #writesAtCut = 0;
  #throttledInRound = 0;
  #throttled = 0;
  readonly #listener: (e: PoolEvents['pool:taskError']) => void;

  /**
   * `granted`: the lease's rate (writes/s); `ceiling`: the budget's; `writes()`: the writes sent so far
   * under the lease (refused ones included); `now`: the clock of the pool's durations.
   */
  constructor(
    private readonly target: PacedTarget,
    private readonly events: RefusalEvents,
    granted: number,
    private readonly ceiling: number,
    private readonly writes: () => number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#rate = granted;
    this.#cutAt = Number.NEGATIVE_INFINITY;
    this.#listener = (e) => this.#refused(e);
    target.setStartInterval(1000 / granted);
    events.on('pool:taskError', this.#listener);
  }

  /** Writes per second the holder paces at now. */
  get rate(): number {
    return this.#rate;
  }

  /** Refusals seen under the lease, every round. */
  get throttled(): number {
    return this.#throttled;
  }

  /** Stops listening (idempotent); the pool keeps its last pace until its next lease. */
  stop(): void {
    this.events.off('pool:taskError', this.#listener);
  }

  #refused(e: PoolEvents['pool:taskError']): void {
    if (!isThrottling(e.error)) return;
    this.#throttled++;
    const now = this.now();
    if (now - e.durationMs < this.#cutAt) return;
    this.#throttledInRound++;
    const sent = Math.max(this.#throttledInRound, this.writes() - this.#writesAtCut);
    const round = {
      accepted: sent - this.#throttledInRound,
      throttled: this.#throttledInRound,
      starved: false,
    };
    if (!overloaded(round)) return;
    this.#rate = Math.min(this.#rate, nextRate(this.#rate, round, this.ceiling));
    this.target.setStartInterval(1000 / this.#rate);
    this.#cutAt = now;
    this.#writesAtCut = this.writes();
    this.#throttledInRound = 0;
  }
}
