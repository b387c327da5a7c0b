import { SemaphoreTimeoutError } from './errors.js';
import type { BookOptions, RateBooking, RateBudget } from './rate-types.js';
import { spreadBooking, spreadWindow } from './spread-booking.js';
import { ROUND_MS } from './tuning.js';

/**
 * Several budgets booked as one (a sharded tenant's stripes, docs/decisions/striped-shard-budgets.md): a
 * booking takes a budget picked at random, as one budget would be booked; only when that one is booked past
 * the caller's `latestStart` (the holder would defer its records) does it try a second, picked at random
 * among the others, and when both refuse, the answer names the sooner first free slot. The second try costs
 * one read (and a write when it books), where a deferral costs a message sent back to the queue and a later
 * delivery; a booking its first pick can take costs what one budget's does. A failure other than a busy
 * budget (the store throttled, the signal aborted) fails the booking at once.
 *
 * Writes that would outlast a round of one budget at its ceiling are spread first: over budgets that are
 * free now, each holding a share of them, the holder pacing at the sum (`spreadBooking`); when the first
 * budget tried is busy, they are booked as above, in one.
 */
export class TwoChoiceRateBudget implements RateBudget {
  /** The budgets' ceilings together: what a holder spread over all of them may pace at. */
  readonly ceiling: number;
  /** One budget's ceiling. */
  readonly #pieceCeiling: number;

  /**
   * `budgets`: at least one, all with the same ceiling. `random`: uniform [0, 1), picks the budgets
   * (@default Math.random). `now`: epoch ms, when a budget counts as free (@default Date.now).
   */
  constructor(
    readonly name: string,
    private readonly budgets: readonly RateBudget[],
    private readonly random: () => number = Math.random,
    private readonly now: () => number = Date.now,
  ) {
    if (budgets.length === 0) throw new RangeError(`rate budget "${name}": no budgets to book from`);
    this.#pieceCeiling = budgets[0]!.ceiling;
    this.ceiling = this.#pieceCeiling * budgets.length;
  }

  async book(options: BookOptions): Promise<RateBooking> {
    const count = this.budgets.length;
    const perRound = Math.max(1, Math.floor((this.#pieceCeiling * ROUND_MS) / 1000));
    const pieces = Math.min(count, Math.ceil(options.writes / perRound));
    if (pieces > 1) {
      const spread = await this.#bookSpread(options, pieces);
      if (spread !== undefined) return spread;
    }
    return this.#bookTwoChoices(options);
  }

  async #bookTwoChoices(options: BookOptions): Promise<RateBooking> {
    const count = this.budgets.length;
    const a = this.#pick(count);
    const first = this.budgets[a]!;
    if (count === 1) return first.book(options);
    let refused: SemaphoreTimeoutError;
    try {
      return await first.book(options);
    } catch (err) {
      if (!(err instanceof SemaphoreTimeoutError)) throw err;
      refused = err;
    }
    // One of the other budgets, at random.
    const second = this.budgets[(a + 1 + this.#pick(count - 1)) % count]!;
    try {
      return await second.book(options);
    } catch (err) {
      if (!(err instanceof SemaphoreTimeoutError)) throw err;
      const freeAt = (e: SemaphoreTimeoutError) => e.freeAt ?? Number.POSITIVE_INFINITY;
      throw freeAt(err) < freeAt(refused) ? err : refused;
    }
  }

  /**
   * `pieces` budgets' worth of writes over the budgets free now (their first free slot within one slot at
   * the ceiling), in random order: the first takes its share, each other the writes left that fit by the
   * first one's end, so the windows end together; two budgets found busy end the search. Undefined when the
   * first budget tried is busy: the writes are then booked in one. A failure after the first piece keeps
   * the pieces booked so far (the writes they leave are booked again when the slots are over).
   */
  async #bookSpread(options: BookOptions, pieces: number): Promise<RateBooking | undefined> {
    const order = this.#shuffled();
    const slotMs = 1000 / this.#pieceCeiling;
    const freeBy = (at: number) => Math.min(options.latestStart, Math.max(at, this.now()) + slotMs);
    let first: RateBooking;
    try {
      first = await this.budgets[order[0]!]!.book({
        ...options,
        writes: Math.ceil(options.writes / pieces),
        latestStart: freeBy(options.earliestStart ?? this.now()),
      });
    } catch (err) {
      if (err instanceof SemaphoreTimeoutError) return undefined;
      throw err;
    }
    const booked = [first];
    let left = options.writes - first.writes;
    let busy = 0;
    for (const k of order.slice(1)) {
      if (booked.length === pieces || left <= 0 || busy === 2) break;
      try {
        const piece = await this.budgets[k]!.book({
          ...options,
          writes: left,
          latestStart: freeBy(first.startAt),
          earliestStart: first.startAt,
          writeBy: Math.min(options.writeBy, first.endsAt),
        });
        booked.push(piece);
        left -= piece.writes;
      } catch (err) {
        if (options.signal?.aborted === true) throw options.signal.reason;
        if (err instanceof SemaphoreTimeoutError) busy++;
        else break;
      }
    }
    if (booked.length === 1) return first;
    // A piece that starts too late or ends too soon to add to the first one's writes is left unused (its
    // slots pass; its empty report moves nothing).
    if (spreadWindow(booked).writes <= first.writes) {
      for (const piece of booked.slice(1))
        void piece.report({ accepted: 0, throttled: 0, starved: false }).catch(() => {});
      return first;
    }
    return spreadBooking(booked);
  }

  /** The budgets' indexes in random order. */
  #shuffled(): number[] {
    const order = this.budgets.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = this.#pick(i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    return order;
  }

  /** A uniform index in 0..n-1. */
  #pick(n: number): number {
    return Math.min(n - 1, Math.floor(this.random() * n));
  }
}
