/** Slot width of the meter: fine enough to follow a 20 ms round trip. */
const SLOT_MS = 10;

/**
 * Attempts and successes per second, measured from completion times over the most recent slots: at least
 * `minSpanMs`, widened (up to `maxSpanMs`) until `minSamples` attempts are covered, so a busy pool gets a
 * fresh reading and a slow one a steady reading. The autotuner uses it for what the pool really sends and
 * what the service really accepts, instead of rates derived from in-flight counts and a mean latency.
 */
export class RateMeter {
  readonly #slots: number;
  readonly #minSlots: number;
  readonly #minSamples: number;
  readonly #attempts: number[];
  readonly #successes: number[];
  #head = 0;
  #headSlot = Number.NaN;
  #firstAt: number | undefined;

  constructor(minSpanMs = 50, maxSpanMs = 500, minSamples = 100) {
    this.#slots = Math.max(1, Math.round(maxSpanMs / SLOT_MS));
    this.#minSlots = Math.min(this.#slots, Math.max(1, Math.round(minSpanMs / SLOT_MS)));
    this.#minSamples = minSamples;
    this.#attempts = new Array<number>(this.#slots).fill(0);
    this.#successes = new Array<number>(this.#slots).fill(0);
  }

  record(now: number, ok: boolean): void {
    this.#roll(now);
    this.#firstAt ??= now;
    this.#attempts[this.#head]! += 1;
    if (ok) this.#successes[this.#head]! += 1;
  }

  /** Completed attempts and successes per second (`Infinity` before the first completion). */
  read(now: number): { attempts: number; successes: number } {
    if (this.#firstAt === undefined) {
      return { attempts: Number.POSITIVE_INFINITY, successes: Number.POSITIVE_INFINITY };
    }
    this.#roll(now);
    // Slots that existed since the first completion: early on the window is not full yet.
    const lived = Math.max(1, Math.ceil((now - this.#firstAt) / SLOT_MS));
    const available = Math.min(this.#slots, lived);
    let attempts = 0;
    let successes = 0;
    let used = 0;
    while (used < available && (used < this.#minSlots || attempts < this.#minSamples)) {
      const i = (this.#head - used + this.#slots) % this.#slots;
      attempts += this.#attempts[i]!;
      successes += this.#successes[i]!;
      used += 1;
    }
    // The newest slot is partly elapsed: count the time it has really covered.
    const spanMs = Math.max(1, (used - 1) * SLOT_MS + (now - Math.floor(now / SLOT_MS) * SLOT_MS));
    return { attempts: (attempts * 1000) / spanMs, successes: (successes * 1000) / spanMs };
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
