/**
 * What one round of writes saw, for the control law (`nextRate`): a holder's writes since its last cut,
 * or a whole lease at its release.
 * @example { accepted: 40, throttled: 0, starved: true }
 */
export interface WriteRound {
  /** Writes the service accepted. */
  readonly accepted: number;
  /** Writes the service refused as throttled (S3 SlowDown, 503). */
  readonly throttled: number;
  /** The holder wanted a higher rate than it was granted (its writes waited for their turn). */
  readonly starved: boolean;
}

/** What a lease saw, reported in its release: the control law moves the budget by it. */
export type LeaseReport = WriteRound;

/** Options of one `RateBudget.take`. */
export interface TakeOptions {
  /**
   * The least rate worth having (writes/s, > 0, <= `want`): below it the caller waits. A budget below it
   * (or a least above the ceiling) is granted whole once nothing holds it (only releases raise a budget).
   */
  readonly least: number;
  /** Epoch ms: stop waiting and reject with `SemaphoreTimeoutError` after this. */
  readonly deadline: number;
  /** Aborts the wait and every request of the call. */
  readonly signal?: AbortSignal;
  /** How long the lease lasts, ms from the call (the invocation's remaining time plus a margin). */
  readonly leaseMs: number;
  /**
   * Writes the holder will make under the lease. Its entry then says when it expects to be done (its
   * writes at its rate), and waiters sleep until enough holders are due instead of polling; one whose turn
   * cannot come before its deadline rejects at once (`SemaphoreTimeoutError.freeAt`).
   * @default undefined (the holder is due at its lease end)
   */
  readonly writes?: number;
}

/** A share of a prefix's budget, held from `take` until `release` or `expiresAt`. */
export interface RateLease {
  /** Writes per second granted: between the take's `least` and `want` (the whole budget when that is less). */
  readonly rate: number;
  /** The lease id: it keys the holder entry, and fences it (a reclaimed lease frees nothing). */
  readonly fence: string;
  /** Epoch ms the grant was made (a decrease at release needs the budget's last decrease before it). */
  readonly takenAt: number;
  /** Epoch ms after which other holders may reclaim the rate. */
  readonly expiresAt: number;
  /**
   * Gives the rate back and moves the budget by the control law applied to `report`, in one conditional
   * write. Idempotent. Rejects with `signal`'s reason (or the store's error) when it cannot finish: the
   * lease then expires by itself at `expiresAt`.
   */
  release(report: LeaseReport, options?: { readonly signal?: AbortSignal }): Promise<void>;
}

/** A prefix's fleet-wide write budget (docs/fleet-cap.md). */
export interface RateBudget {
  /** What the budget is for, e.g. `prefix:bucket/t=acme/`. */
  readonly name: string;
  /** The most writes per second the budget may reach (`S3_PREFIX_WRITE_RATE`). */
  readonly ceiling: number;
  /**
   * Grants `min(want, free)` writes per second once at least `options.least` is free (the whole budget,
   * when that is less), waiting (re-reading with jittered backoff) until `options.deadline`; then rejects
   * with `SemaphoreTimeoutError`, holding nothing. Aborting `options.signal` rejects with its reason,
   * holding nothing. A `want` above the ceiling is the ceiling.
   */
  take(want: number, options: TakeOptions): Promise<RateLease>;
}
