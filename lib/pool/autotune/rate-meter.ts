/** Slot width of the meter: fine enough to follow a 20 ms round trip. */
const SLOT_MS = 10;

/**
 * Attempts and successes per second over the last `windowMs`, measured from completion times. The
 * autotuner uses it for what the pool really sends and what S3 really accepts, instead of deriving rates
 * from in-flight counts and an average latency that is biased low at the start (fast answers come first).
 */
export class RateMeter {
  readonly #slots: number;
  readonly #attempts: number[];
  readonly #successes: number[];
  #head = 0;
  #headSlot = Number.NaN;
  #firstAt: number | undefined;

  constructor(windowMs = 100) {
    this.#slots = Math.max(1, Math.round(windowMs / SLOT_MS));
    this.#attempts = new Array<number>(this.#slots).fill(0);
    this.#successes = new Array<number>(this.#slots).fill(0);
  }

  record(now: number, ok: boolean): void {
    this.#roll(now);
    this.#firstAt ??= now;
    this.#attempts[this.#head]! += 1;
    if (ok) this.#successes[this.#head]! += 1;
  }

  /** Completed attempts per second (`Infinity` before the first). */
  attemptsPerSecond(now: number): number {
    return this.#perSecond(now, this.#attempts);
  }

  /** Successful attempts per second. */
  successesPerSecond(now: number): number {
    return this.#perSecond(now, this.#successes);
  }

  #perSecond(now: number, counts: number[]): number {
    if (this.#firstAt === undefined) return Number.POSITIVE_INFINITY;
    this.#roll(now);
    const sum = counts.reduce((s, n) => s + n, 0);
    // Early on the window is not full yet: divide by the time actually observed.
    const spanMs = Math.min(this.#slots * SLOT_MS, Math.max(SLOT_MS, now - this.#firstAt));
    return (sum * 1000) / spanMs;
  }

  #roll(now: number): void {
    const slot = Math.floor(now / SLOT_MS);
    if (Number.isNaN(this.#headSlot)) {
      this.#headSlot = slot;
      return;
    }
    const steps = Math.min(this.#slots, slot - this.#headSlot);
    for (let i = 0; i < steps; i++) {
      this.#head = (this.#head + 1) % this.#slots;
      this.#attempts[this.#head] = 0;
      this.#successes[this.#head] = 0;
    }
    if (slot > this.#headSlot) this.#headSlot = slot;
  }
}
