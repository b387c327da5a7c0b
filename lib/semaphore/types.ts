/** Permits held from a semaphore until `release()` or until `expiresAt`, whichever comes first. */
export interface Lease {
  /**
   * How many permits were granted: between the request's `min` and `k` (an adaptive semaphore whose whole
   * limit is below `min` grants all of it, possibly a fraction of one permit).
   */
  readonly permits: number;

  /**
   * The latency per attempt, ms, the grant was sized with (an adaptive semaphore's fleet-wide measurement;
   * absent for the others): the permits stand for `permits / latencyMs` attempts per second, which a holder
   * whose own attempts run slower or quicker may keep by pacing (the handler's `GrantGovernor`).
   */
  readonly latencyMs?: number;

  /** Unique lease id. It fences the holder: once reclaimed, nothing done under this id frees anyone's permits. */
  readonly fence: string;
  /** Epoch ms after which other acquirers may reclaim the permits. Stop using them before this instant. */
  readonly expiresAt: number;
  /**
   * Gives the permits back. Idempotent; a lease that was already reclaimed frees nothing. Rejects with
   * `options.signal`'s reason (or the SDK's error) when it cannot finish in time: the lease then expires
   * by itself at `expiresAt`.
   */
  release(options?: LeaseCallOptions): Promise<void>;
  /** Moves the expiry to `ms` from now. Rejects with `LeaseLostError` when the lease was already reclaimed. */
  extend(ms: number, options?: LeaseCallOptions): Promise<void>;
  /**
   * What the work under the lease saw, told before `release()`: an adaptive semaphore moves its limit
   * with it in the release's own write (`AdaptiveDynamoSemaphore`); the others ignore it (optional).
   */
  report?(usage: LeaseUsage): void;
  /**
   * Tells the semaphore, mid-lease, what the work has seen so far (an adaptive semaphore; the others have
   * no `resize`). When its slot time per request (`usage.attemptMs` over its writes, or its attempts) is
   * above the latency the grant was sized with, the permits carry fewer requests per second than the grant
   * stands for: the semaphore then moves the fleet's latency to the measured one (at most x4), rescales the
   * limit with it (the same rate, more permits), and grows this lease by its share of the rescale. Once per
   * lease; resolves the permits held after it (unchanged when nothing moved, when another holder moved
   * the limit first, or when the lease is not its shard's only holder: another one paces at the latency it
   * was granted with, so a rescale around it would over-grant the rate). Rejects
   * with `options.signal`'s reason (or the first SDK error) when it cannot finish in time, once every
   * shard's request has settled: each shard of the lease then keeps the permits it had, except one whose
   * resize was answered (`permits` counts it), and its release gives back whichever count the shard holds.
   */
  resize?(usage: LeaseUsage, options?: LeaseCallOptions): Promise<number>;
}

/**
 * What the work under one lease saw (S3 attempts), reported with `lease.report` before the release.
 * @example { succeeded: 40, throttled: 1 }
 */
export interface LeaseUsage {
  /** Attempts that succeeded while the lease was held. */
  readonly succeeded: number;
  /** Attempts answered with SlowDown / 503 (`isThrottling`) while the lease was held. */
  readonly throttled: number;
  /**
   * Sum of those attempts' durations, ms: the latency the fleet's limit is sized by. Without it the
   * semaphore takes permit-milliseconds per attempt, which also counts permits held idle (hand-overs, a
   * tenant's other work) as latency and so sizes the ceiling above what S3's rate allows.
   */
  readonly attemptMs?: number;
  /**
   * S3 write requests (PUT, DELETE) among the attempts, refused ones included, when the holder counted them.
   * S3 limits a prefix's writes and its reads apart (3,500 and 5,500 per second), and the prefix limit is a
   * write rate: with the count, the limit is sized by slot-milliseconds per write (`attemptMs / writes`), so
   * the reads sharing the slots (the GET of a conditional write) do not count against the write rate. Without
   * it every attempt counts as a write, and a pool that reads as often as it writes gets half its rate.
   */
  readonly writes?: number;
  /**
   * Share of its grant the holder was running at when it released, after cutting itself on SlowDown
   * (`GrantGovernor`: 0.85 per round trip of refusals, earned back per accepted attempt); 1 or absent when
   * it never cut. An adaptive limit that shrinks for this lease shrinks at least to this share (never below
   * half per release), so the fleet follows a drop in S3's limit at the holder's pace, not a step per release.
   */
  readonly keptShare?: number;
}

/**
 * Bounds one `release` or `extend` call.
 * @example { signal: AbortSignal.timeout(1_000) }
 */
export interface LeaseCallOptions {
  /**
   * Aborting it abandons the call's requests (a stalled DynamoDB cannot hold the caller).
   * @default undefined (DynamoSemaphore: bounded by its `giveBackTimeoutMs`)
   */
  signal?: AbortSignal;
}

export interface AcquireOptions {
  /** Fewest permits worth having; the grant is between `min` and `k`. Default: `k` (all or nothing). */
  min?: number;
  /**
   * Epoch ms. When `min` permits cannot be had by then, the call rejects with `SemaphoreTimeoutError`; an
   * adaptive semaphore rejects at once when its holders say (`requests`) they will not be done by then.
   * Default: wait until `signal` aborts.
   */
  deadline?: number;
  /**
   * Aborting it rejects the call with `signal.reason`, including while a request is in flight (every
   * DynamoDB request carries it); nothing stays held that could be given back.
   */
  signal?: AbortSignal;
  /** Lease length for this acquire, relative to the call (e.g. invocation time left + a margin). Default: the semaphore's `leaseMs`. */
  leaseMs?: number;
  /**
   * The longest wait between two rounds of this acquire, ms, when shorter than the semaphore's own
   * `backoffCapMs` (DynamoDB semaphores poll; the memory one wakes waiters and ignores it): a caller whose
   * work is closer to giving up (records near the DLQ) polls more often and so tends to win the permits
   * when they come free. Each round is one read.
   * @default the semaphore's `backoffCapMs`
   * @example { backoffCapMs: 25 }
   */
  backoffCapMs?: number;
  /**
   * How many requests the holder will make under the lease (an adaptive semaphore; the others ignore it).
   * Its holder entry then says when it expects to give the permits back, at the rate the grant stands for
   * (`requests x lease.latencyMs / permits`), and a waiter sleeps until the earliest time enough holders
   * expect to be done instead of polling, or gives up at once when that is past its `deadline`: a waiter
   * that cannot get a turn frees its caller (an invocation slot) instead of polling until its deadline.
   * A holder that announced nothing is polled for as before; one that is late is polled for too, and a
   * waiter that reaches its deadline behind it says when it was due (`SemaphoreTimeoutError.dueAt`).
   * @default undefined (no announcement)
   * @example { requests: 100 }
   */
  requests?: number;
}

/** A counting semaphore whose permits are leased. Implemented by `DynamoSemaphore` and `MemorySemaphore`. */
export interface Semaphore {
  readonly name: string;
  readonly limit: number;
  /** Acquires between `options.min` (default `k`) and `k` permits, never more than are free. */
  acquire(k: number, options?: AcquireOptions): Promise<Lease>;
}
