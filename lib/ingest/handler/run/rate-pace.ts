import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import type { StartIntervalOptions } from '../../../pool/start-pacer.js';
import { overloaded } from '../../../semaphore/rate-law.js';
import type { WriteRound } from '../../../semaphore/rate-types.js';
import { MIN_ROUND_WRITES, SLOT_CATCH_UP_MS } from '../../../semaphore/tuning.js';

/** What a holder's pace steers (`ExecutorPool` fits): the least ms between two paced starts. */
export interface PacedTarget {
  setStartInterval(ms: number, options?: StartIntervalOptions): void;
}

/** The pool events a pace counts refusals from (`ExecutorPool` fits). */
export interface RefusalEvents {
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
}

/**
 * A holder's pace inside one booking (docs/fleet-cap.md, "Pace"): its writes start at the booking's rate,
 * and refusals are counted in rounds. A round starts at its first refusal (writes accepted before the
 * limit dropped do not dilute it) and is overloaded once it has more refusals than noise; then `onOverload`
 * steps the schedule with it and resolves the rate to pace at, and the next round starts (a refusal of a
 * write started before that cut belongs to the round that cut). The pace never rises within a booking.
 * A round never outlives a decrease: a new booking at a lower rate than the round's writes were paced at
 * starts a new round, because the schedule was decreased after them (docs/fleet-cap.md, "Pace").
 */
export class RatePace {
  #rate: number;
  /** The highest rate the round's writes were paced at. */
  #roundRate: number;
  #cutAt = Number.NEGATIVE_INFINITY;
  #sentAtCut = 0;
  #throttledSinceCut = 0;
  /** Writes sent when the round's first refusal came (undefined: none since the cut). */
  #roundFrom: number | undefined;
  /** The step in flight, if any. */
  #stepping: Promise<void> | undefined;
  readonly #listener: (e: PoolEvents['pool:taskError']) => void;

  /**
   * `rate`: the booking's (writes/s); `writes()`: the writes sent so far under the booking (refused ones
   * included); `now`: the clock of the pool's durations; `minRoundWrites`: the writes a round needs, from
   * its first refusal, before its share is trusted (MIN_ROUND_WRITES for each prefix the writes spread over).
   */
  constructor(
    private readonly target: PacedTarget,
    private readonly events: RefusalEvents,
    rate: number,
    private readonly writes: () => number,
    private readonly onOverload: (round: WriteRound) => Promise<number>,
    private readonly now: () => number = () => performance.now(),
    private readonly minRoundWrites: number = MIN_ROUND_WRITES,
  ) {
    this.#rate = rate;
    this.#roundRate = rate;
    this.#listener = (e) => this.#refused(e);
    target.setStartInterval(1000 / rate, { catchUpMs: SLOT_CATCH_UP_MS });
    events.on('pool:taskError', this.#listener);
  }

  /** Writes per second the holder paces at now. */
  get rate(): number {
    return this.#rate;
  }

  /** What the writes sent since the last cut saw (the whole booking when nothing cut): its last round. */
  sinceCut(): { readonly accepted: number; readonly throttled: number } {
    const sent = this.writes() - this.#sentAtCut;
    return {
      accepted: Math.max(0, sent - this.#throttledSinceCut),
      throttled: this.#throttledSinceCut,
    };
  }

  /**
   * Paces at `rate` from now (a new booking's, higher or lower). At a rate as high as the round's, the round
   * goes on: the refusals that sent writes to the new booking belong to it, and its report must not read as
   * a round with none. At a lower one the schedule was decreased after the round's writes, by a step that
   * saw the same overload: their refusals belong to that decrease, and stepping the schedule with them
   * again would cut it twice for one overload. A new round starts, and the refusals of writes sent before
   * now no longer count (an increase is held after the decrease anyway).
   */
  restart(rate: number): void {
    if (!(rate > 0)) return;
    const decreased = rate < this.#roundRate;
    this.#rate = rate;
    if (decreased) this.#newRound();
    else this.#roundRate = rate;
    this.target.setStartInterval(1000 / rate, { catchUpMs: SLOT_CATCH_UP_MS });
  }

  /**
   * Ends the round where it stands (its booking's slots are over and it was reported): refusals of writes
   * sent before now belong to it, and the next booking's writes start a new one.
   */
  endRound(): void {
    this.#newRound();
  }

  /** Resolves once the step in flight, if any, has cut (`onOverload` must not reject). */
  async settled(): Promise<void> {
    await this.#stepping;
  }

  /** Stops listening (idempotent); the pool keeps its last pace until its next booking. */
  stop(): void {
    this.events.off('pool:taskError', this.#listener);
  }

  #refused(e: PoolEvents['pool:taskError']): void {
    // A read's SlowDown (an unpaced task) is S3's read limit, not the prefix's write rate.
    if (!e.paced || !isThrottling(e.error)) return;
    // Sent before the last cut: its round already stepped.
    if (this.now() - e.durationMs < this.#cutAt) return;
    this.#throttledSinceCut++;
    this.#roundFrom ??= Math.max(this.#sentAtCut, this.writes() - 1);
    if (this.#stepping !== undefined) return;
    // A round starts at its first refusal (writes accepted before the limit dropped do not dilute it) and
    // needs MIN_ROUND_WRITES writes to each prefix its writes spread over before its share is trusted.
    const sent = this.writes() - this.#roundFrom;
    if (sent < this.minRoundWrites) return;
    const throttled = this.#throttledSinceCut;
    const round = { accepted: Math.max(0, sent - throttled), throttled, starved: false };
    if (!overloaded(round)) return;
    this.#stepping = this.onOverload(round).then((rate) => this.#cut(rate));
  }

  #cut(rate: number): void {
    if (rate > 0 && rate < this.#rate) {
      this.#rate = rate;
      this.target.setStartInterval(1000 / rate, { catchUpMs: SLOT_CATCH_UP_MS });
    }
    this.#newRound();
    this.#stepping = undefined;
  }

  /** The next round starts now, at the pace's rate: refusals of writes sent before now belong to the last. */
  #newRound(): void {
    this.#cutAt = this.now();
    this.#sentAtCut = this.writes();
    this.#throttledSinceCut = 0;
    this.#roundFrom = undefined;
    this.#roundRate = this.#rate;
  }
}
