import { AttemptSettlers } from './attempt-settlers.js';
import { Autotuner } from './autotune/autotuner.js';
import { type Admission, CircuitBreaker, type CircuitState } from './circuit-breaker.js';
import type { BudgetMember } from './concurrency-budget.js';
import { DeadlineTimer } from './deadline-timer.js';
import { SingleFlight } from './dedup.js';
import {
  CircuitOpenError,
  PoolStoppedError,
  QueueFullError,
  TaskAbortedError,
  TaskTimeoutError,
} from './errors.js';
import { PoolEventEmitter, type PoolEventName, type PoolListener } from './events.js';
import {
  type ExecutorPoolOptions,
  POOL_DEFAULTS,
  type ResolvedPoolOptions,
  resolvePoolOptions,
} from './options.js';
import { type AggregateMetrics, type DetailedMetrics, PoolMetrics, type PoolStats } from './pool-metrics.js';
import { PriorityQueue } from './priority-queue.js';
import { type ProcessOptions, type ProcessSummary, processWithPool } from './process.js';
import { computeBackoff, isRetryableError } from './retry-policy.js';
import { SignalGroups } from './signal-groups.js';
import type { EnqueueOptions, TaskContext, TaskFn } from './task.js';
import {
  Attempt,
  BACKOFF,
  BackoffEntry,
  DONE,
  noop,
  QUEUED,
  RUNNING,
  Task,
  TaskExtras,
} from './task-state.js';
import { assertConcurrency, assertFractionalConcurrency } from './validation.js';

let capturedResolve: (value: unknown) => void = noop;
// One shared executor: `new Promise(capture)` allocates no closure per task.
const capture = (resolve: (value: unknown) => void): void => {
  capturedResolve = resolve;
};

function rejectingThenable(error: unknown): PromiseLike<never> {
  return {
    // biome-ignore lint/suspicious/noThenProperty: a thenable is the point: resolve() adopts its rejection.
    then(_onFulfilled, onRejected) {
      // Stryker disable next-line OptionalChaining: resolve() always passes onRejected to a thenable
      onRejected?.(error);
      return undefined as never;
    },
  };
}

/** Describes the first bad field of `options`, if any. */
function invalidEnqueueOption(options: EnqueueOptions): string | undefined {
  const { priority, timeout, retries } = options;
  if (priority !== undefined && !Number.isFinite(priority))
    return `priority must be a finite number, got ${priority}`;
  if (timeout !== undefined && !(timeout >= 0)) return `timeout must be a number >= 0, got ${timeout}`;
  if (retries !== undefined && !(retries >= 0)) return `retries must be a number >= 0, got ${retries}`;
  const { paced } = options;
  if (paced !== undefined && typeof paced !== 'boolean')
    return `paced must be a boolean, got ${String(paced)}`;
  return undefined;
}

function rejected<T>(error: unknown): Promise<T> {
  const promise = Promise.reject(error);
  promise.catch(noop);
  return promise;
}

/** What `#admitHead` found: the head of the queue may start (as a breaker probe or not), or nothing may. */
const START = 0;
const START_PROBE = 1;
const HOLD = 2;

/**
 * A bounded, prioritised executor with retries, per-attempt timeouts, an optional circuit breaker,
 * deduplication, a shared concurrency budget and constant-memory metrics. This file is the scheduler: the
 * task state machine (queue -> running -> backoff -> done) and slot accounting. Bulk feeding (`process`,
 * process.ts) and single-flight (dedup.ts) sit on top of it; see lib/pool/README.md.
 */
export class ExecutorPool {
  readonly #options: ResolvedPoolOptions;
  readonly #queue = new PriorityQueue<Task>();
  readonly #timeouts = new DeadlineTimer<Attempt>((attempt) => this.#onTimeout(attempt));
  readonly #backoffs = new DeadlineTimer<BackoffEntry>((entry) => this.#onBackoffDone(entry));
  readonly #signals = new SignalGroups<TaskExtras>((extras) => this.#abortTask(extras.task));
  readonly #settlers = new AttemptSettlers((attempt, value, error, failed) =>
    this.#onSettled(attempt, value, error, failed),
  );
  readonly #events = new PoolEventEmitter();
  readonly #metrics = new PoolMetrics();
  readonly #breaker: CircuitBreaker | undefined;
  readonly #member: BudgetMember | undefined;
  readonly #dedup: SingleFlight | undefined;
  #cap: number;
  /** What `setConcurrency` was given: `#cap` slots, each busy at most `#duty` of the time (see `#rest`). */
  #concurrency: number;
  #duty = 1;
  #active = 0;
  /** Slots resting after an attempt (fractional concurrency): they start nothing until their rest ends. */
  #resting = 0;
  /** Those rests, so a raised concurrency can shorten them (`#shortenRests`). */
  readonly #rests = new Set<Rest>();
  #delayed = 0;
  /** Least ms between two attempt starts (0: no pacing), see `setStartInterval`. */
  #startGapMs = 0;
  #lastStartAt = Number.NEGATIVE_INFINITY;
  /** Pending while a queued task waits for the start interval to pass. */
  #paceTimer: ReturnType<typeof setTimeout> | undefined;
  #seq = 0;
  #paused: boolean;
  #stopped = false;
  #processed = 0;
  #errors = 0;
  #retries = 0;
  #running: Attempt | undefined = undefined;
  /** Work arrived since the last time the pool was idle: the next idle moment emits `pool:drained`. */
  #busy = false;
  #idleWaiters: (() => void)[] = [];
  #settledWaiters: (() => void)[] = [];
  #roomWaiters: (() => void)[] = [];
  #autotuner: Autotuner | undefined;

  constructor(options: ExecutorPoolOptions = {}) {
    const auto = options.concurrency === 'auto';
    const concurrency =
      options.concurrency === 'auto'
        ? (options.autotune?.initialConcurrency ?? POOL_DEFAULTS.concurrency)
        : (options.concurrency ?? POOL_DEFAULTS.concurrency);
    assertConcurrency(concurrency);
    this.#cap = concurrency;
    this.#concurrency = concurrency;
    this.#options = resolvePoolOptions(options);
    this.#paused = options.paused ?? false;
    if (options.circuitBreaker?.enabled) {
      this.#breaker = new CircuitBreaker(options.circuitBreaker, (state) => this.#onCircuitChange(state));
    }
    if (options.deduplication?.enabled !== false) this.#dedup = new SingleFlight(options.deduplication);
    this.#member = options.budget?.join({ onSlotGranted: () => this.#onSlotGranted() });
    const tune = options.autotune;
    if ((auto && tune?.enabled !== false) || tune?.enabled === true) {
      this.#autotuner = new Autotuner(this, { ...tune, enabled: true });
    }
  }

  /** The adaptive concurrency controller, when `concurrency: 'auto'` or `autotune.enabled` turned it on. */
  get autotuner(): Autotuner | undefined {
    return this.#autotuner;
  }

  /** The current cap on in-flight attempts, as last set (fractional: an average, see `setConcurrency`). */
  get concurrency(): number {
    return this.#concurrency;
  }

  /** Queued tasks beyond this make `enqueue` reject with QueueFullError. */
  get maxQueueSize(): number {
    return this.#options.maxQueueSize;
  }

  /** Whether `enqueue` would refuse a task with QueueFullError now (the queue is full and no slot is free). */
  get isQueueFull(): boolean {
    return this.#queue.size >= this.#options.maxQueueSize && !this.#canStartNow();
  }

  get isPaused(): boolean {
    return this.#paused;
  }

  get isStopped(): boolean {
    return this.#stopped;
  }

  /** The circuit breaker's state (`'closed'` when none is configured). */
  get circuitState(): CircuitState {
    return this.#breaker?.state ?? 'closed';
  }

  /**
   * Changes the cap live. Growing starts queued work at once; shrinking aborts nothing, it starts nothing
   * until in-flight work drops below the new cap. Cheap enough to call per completed sample.
   * A fractional `n` (> 0) caps the *average* in flight: `ceil(n)` slots, each resting after an attempt for
   * the attempt's duration x (`ceil(n) / n` - 1), so each slot is busy `n / ceil(n)` of the time. By Little's
   * law that caps the rate at `n / latency` whatever the latency is, which is how a fleet-wide grant of less
   * than one permit (a rate limit x latency < 1) is kept without knowing the latency.
   * @example pool.setConcurrency(0.75) // one attempt at a time, each followed by a third of its duration idle
   */
  setConcurrency(n: number): void {
    assertFractionalConcurrency(n);
    this.#concurrency = n;
    this.#cap = Math.ceil(n);
    this.#duty = n / this.#cap;
    if (this.#rests.size > 0) this.#shortenRests(performance.now());
    this.#pump();
  }

  /**
   * Spaces attempt starts at least `ms` apart (0: no pacing; the default): a cap on the *rate* of starts on
   * top of the cap on attempts in flight. A fleet-wide grant is a rate (`permits / latency`), and a pool
   * that sends it in bursts (several slots freed by quick answers at once) is throttled by a service that
   * admits only a fraction of a second of its rate in a burst, though its average is under the limit;
   * evenly spaced starts at that rate are not refused. Retries and probes are paced alike; tasks enqueued
   * with `paced: false` (reads a service limits apart from writes) start unspaced, and a paced task at the head of the
   * queue holds back the tasks behind it until its turn.
   * @example pool.setStartInterval(1000 / 45) // at most 45 starts per second
   */
  setStartInterval(ms: number): void {
    if (!(ms >= 0 && Number.isFinite(ms))) {
      throw new RangeError(`startInterval must be a finite number >= 0, got ${ms}`);
    }
    const shorter = ms < this.#startGapMs;
    this.#startGapMs = ms;
    // Called per completed attempt by a governor: a longer (or the same) interval starts nothing sooner, and a
    // pending timer re-checks the wait when it fires, so only a shorter one re-arms and pumps.
    if (!shorter) return;
    if (this.#paceTimer !== undefined) {
      clearTimeout(this.#paceTimer);
      this.#paceTimer = undefined;
    }
    this.#pump();
  }

  /** The least ms between two attempt starts (0: none). */
  get startInterval(): number {
    return this.#startGapMs;
  }

  /** Whether the start interval holds the next start back at `now`; if so, a timer pumps when it passes. */
  #paced(now: number): boolean {
    const wait = this.#lastStartAt + this.#startGapMs - now;
    if (!(wait > 0)) return false;
    this.#paceTimer ??= setTimeout(() => {
      this.#paceTimer = undefined;
      this.#pump();
    }, Math.ceil(wait));
    return true;
  }

  on<K extends PoolEventName>(event: K, listener: PoolListener<K>): this {
    this.#events.on(event, listener);
    return this;
  }

  off<K extends PoolEventName>(event: K, listener: PoolListener<K>): this {
    this.#events.off(event, listener);
    return this;
  }

  /** Runs `fn` when a slot is free (highest priority first, FIFO among equals) and settles with its result. */
  enqueue<T>(fn: (ctx: TaskContext) => Promise<T> | T, options?: EnqueueOptions): Promise<T> {
    if (this.#stopped) return rejected(new PoolStoppedError());
    let signal: AbortSignal | undefined;
    let dedupKey: string | undefined;
    let needsExtras = false;
    if (options !== undefined) {
      const invalid = invalidEnqueueOption(options);
      if (invalid !== undefined) return rejected(new RangeError(invalid));
      signal = options.signal;
      if (signal?.aborted) {
        return rejected(new TaskAbortedError('task aborted before it was queued', { cause: signal.reason }));
      }
      if (this.#dedup !== undefined) {
        dedupKey = this.#dedup.keyOf(fn as TaskFn<unknown>, options);
        if (dedupKey !== undefined) {
          const joined = this.#dedup.join(dedupKey, performance.now(), signal);
          if (joined !== undefined) return joined as Promise<T>;
        }
      }
      needsExtras =
        signal !== undefined ||
        dedupKey !== undefined ||
        options.id !== undefined ||
        options.timeout !== undefined ||
        options.retries !== undefined;
    }
    const now = performance.now();
    if (this.#breaker?.rejects(now)) return rejected(new CircuitOpenError(this.#breaker.retryAfter(now)));
    if (this.#queue.size >= this.#options.maxQueueSize && !this.#canStartNow()) {
      return rejected(new QueueFullError(this.#options.maxQueueSize));
    }
    const task = new Task(fn as TaskFn<unknown>, options?.priority ?? 0, ++this.#seq, now);
    if (options?.paced === false) task.paced = false;
    const promise = new Promise(capture);
    task.resolve = capturedResolve;
    task.promise = promise;
    if (needsExtras) {
      const extras = new TaskExtras(task, options!.id, options!.timeout, options!.retries, signal);
      task.extras = extras;
      if (signal !== undefined) this.#signals.join(signal, extras);
      if (dedupKey !== undefined) {
        extras.dedupKey = dedupKey;
        this.#dedup!.lead(dedupKey, promise, now);
      }
    }
    this.#busy = true;
    if (
      this.#queue.size === 0 &&
      !this.#paused &&
      this.#active + this.#resting < this.#cap &&
      this.#breaker === undefined &&
      this.#member === undefined &&
      (this.#startGapMs === 0 || !task.paced)
    ) {
      // Nothing waits and a slot is free: skip the queue.
      this.#start(task, false, now);
    } else {
      this.#queue.push(task);
      this.#pump();
    }
    return promise as Promise<T>;
  }

  /**
   * Feeds `input` through the pool with back-pressure (see `processWithPool` in process.ts): an item is
   * read only while fewer than `concurrency + readAhead` of this call's items are unfinished. Resolves to
   * counts when every item read has settled; rejects with PoolStoppedError / TaskAbortedError if the pool
   * stopped or `signal` aborted before the input was exhausted, or with the error a callback threw.
   */
  process<I, R>(
    input: Iterable<I> | AsyncIterable<I>,
    fn: (item: I, ctx: TaskContext) => Promise<R> | R,
    options?: ProcessOptions<I, R>,
  ): Promise<ProcessSummary> {
    return processWithPool(this, input, fn, options);
  }

  /** Resolves when `enqueue` would no longer refuse a task for a full queue (at once if it would not now), or at `stop()`. */
  onQueueRoom(): Promise<void> {
    if (!this.isQueueFull || this.#stopped) return Promise.resolve();
    const room = new Promise<void>((resolve) => this.#roomWaiters.push(resolve));
    this.#offerRoom();
    return room;
  }

  /** Stops starting queued tasks; resolves when every in-flight attempt (timed-out work included) has settled. */
  pause(): Promise<void> {
    this.#paused = true;
    this.#member?.cancelWait();
    if (this.#active === 0) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  resume(): void {
    if (this.#stopped) return;
    this.#paused = false;
    this.#pump();
  }

  /** Resolves when nothing is queued, backing off or running (at once if idle), and emits `pool:drained`. */
  drain(): Promise<void> {
    if (this.#isIdle()) {
      this.#emitDrained();
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Rejects every queued and backing-off task with PoolStoppedError, aborts in-flight signals (their callers
   * are rejected at once; their slots are freed as the work settles) and makes later `enqueue`s reject.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#paceTimer);
    this.#paceTimer = undefined;
    this.#autotuner?.detach();
    this.#paused = true;
    this.#member?.cancelWait();
    const error = new PoolStoppedError();
    for (const task of this.#queue.clear()) this.#failTask(task, error);
    for (const entry of this.#backoffs.clear()) {
      this.#delayed -= 1;
      this.#failTask(entry.task, error);
    }
    for (let attempt = this.#running; attempt !== undefined; attempt = attempt.next) {
      if (attempt.detached) continue;
      attempt.detached = true;
      attempt.abort(error);
      this.#failTask(attempt.task, error);
    }
    this.#dedup?.clear();
    for (const wake of this.#roomWaiters.splice(0)) wake();
    this.#checkIdle();
  }

  getStats(): PoolStats {
    return {
      queueSize: this.#queue.size,
      activeCount: this.#active,
      processedCount: this.#processed,
      errorCount: this.#errors,
      retryCount: this.#retries,
    };
  }

  getAggregateMetrics(): AggregateMetrics {
    return this.#metrics.aggregate(performance.now());
  }

  getDetailedMetrics(): DetailedMetrics {
    return this.#metrics.detailed(performance.now(), this.#cap);
  }

  // ---- scheduling ----------------------------------------------------------------------------------

  #canStartNow(): boolean {
    return (
      !this.#paused &&
      this.#active + this.#resting < this.#cap &&
      this.#queue.size === 0 &&
      (this.#member === undefined || this.#member.budget.available > 0)
    );
  }

  /**
   * The breaker's word on starting the head of the queue: START, START_PROBE, or HOLD (half-open with its
   * probes out, or nothing left). While the breaker is open, queued tasks are refused here as they come up.
   */
  #admitHead(): number {
    const breaker = this.#breaker;
    if (breaker === undefined) return START;
    for (;;) {
      const now = performance.now();
      const admission: Admission = breaker.admit(now);
      if (admission === 'run') return START;
      if (admission === 'probe') return START_PROBE;
      if (admission === 'wait') return HOLD;
      this.#failTask(this.#queue.pop()!, new CircuitOpenError(breaker.retryAfter(now)));
      if (this.#queue.size === 0) return HOLD;
    }
  }

  /** Starts queued tasks while slots are free. `now`, when the caller just read the clock, dates the first start. */
  #pump(now = -1): void {
    const queue = this.#queue;
    while (!this.#paused && this.#active + this.#resting < this.#cap && queue.size > 0) {
      if (this.#startGapMs > 0 && queue.peek()!.paced) {
        if (now < 0) now = performance.now();
        if (this.#paced(now)) break;
      }
      const admission = this.#admitHead();
      if (admission === HOLD) break;
      if (this.#member !== undefined && !this.#member.tryAcquire()) {
        if (admission === START_PROBE) this.#breaker!.cancelProbe();
        this.#member.waitForSlot();
        return;
      }
      this.#start(queue.pop()!, admission === START_PROBE, now >= 0 ? now : performance.now());
      // A started task ran its function synchronously: read the clock afresh for the next one.
      now = -1;
    }
    this.#offerRoom();
    if (queue.size === 0) this.#checkIdle();
  }

  /**
   * Wakes `onQueueRoom` waiters once `enqueue` would accept a task. With `maxQueueSize: 0` that is a free
   * slot, not a shorter queue; with a budget, a slot another pool frees: wait in the budget's line for it.
   */
  #offerRoom(): void {
    if (this.#roomWaiters.length === 0) return;
    if (!this.isQueueFull) {
      for (const wake of this.#roomWaiters.splice(0)) wake();
      return;
    }
    // Never wait while the budget has a free slot: its grant would come straight back here, in a loop.
    if (this.#member !== undefined && this.#member.budget.available === 0) this.#member.waitForSlot();
  }

  /** The budget offers this pool a slot (already counted as held); returns whether it was used. */
  #onSlotGranted(): boolean {
    if (
      this.#paused ||
      this.#active + this.#resting >= this.#cap ||
      this.#queue.size === 0 ||
      (this.#startGapMs > 0 && this.#queue.peek()!.paced && this.#paced(performance.now()))
    ) {
      // Nothing to start (or not yet: the pace timer pumps), but a producer waiting in `onQueueRoom` may enqueue into this slot once it is back.
      queueMicrotask(() => this.#offerRoom());
      return false;
    }
    const admission = this.#admitHead();
    if (admission === HOLD) {
      // Refused tasks may have emptied the queue: settle the pool's idle state outside the budget's dispatch.
      if (this.#queue.size === 0) queueMicrotask(() => this.#pump());
      return false;
    }
    this.#start(this.#queue.pop()!, admission === START_PROBE, performance.now());
    // Still busy: get back in line (at the back) for the next slot.
    // Stryker disable next-line LogicalOperator,ArithmeticOperator: re-joining the line more often only adds offers, and #onSlotGranted refuses one this pool cannot use and hands it on in the same dispatch
    if (!this.#paused && this.#active + this.#resting < this.#cap && this.#queue.size > 0)
      this.#member!.waitForSlot();
    return true;
  }

  #start(task: Task, probe: boolean, now: number): void {
    // A paced start late by at most half an interval (the timer's whole-ms rounding, event-loop lag) is
    // counted at its slot, so lateness does not add up under a busy loop. Later than that (an idle pool, a
    // full budget, the in-flight cap) it banks nothing: no burst after a pause. Why:
    // docs/decisions/paced-writes-unpaced-reads.md.
    if (task.paced) {
      const slot = this.#lastStartAt + this.#startGapMs;
      this.#lastStartAt = now - slot <= this.#startGapMs / 2 ? slot : now;
    }
    task.state = RUNNING;
    task.attempts += 1;
    const extras = task.extras;
    const timeout = extras?.timeout ?? this.#options.timeout;
    const attempt = new Attempt(task, task.attempts, now, probe, timeout);
    if (extras !== undefined) extras.current = attempt;
    this.#active += 1;
    const head = this.#running;
    attempt.next = head;
    if (head !== undefined) head.prev = attempt;
    this.#running = attempt;
    const queueWaitMs = now - task.enqueuedAt;
    this.#metrics.started(now, queueWaitMs, this.#active);
    if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) this.#timeouts.add(attempt);
    if (this.#events.has['pool:taskStarted']) {
      this.#events.emit('pool:taskStarted', {
        id: task.id,
        attempt: attempt.attempt,
        activeCount: this.#active,
        queueWaitMs,
      });
    }
    let result: unknown;
    try {
      result = task.fn(attempt);
    } catch (error) {
      // Settle asynchronously like a rejected promise, so a synchronous thrower cannot recurse through pump.
      result = Promise.reject(error);
    }
    // A native promise is watched as is; anything else (a value, a thenable, a Promise subclass) is adopted the
    // way `await` adopts it, so its own `then` runs later, at most once, and a throw from it rejects the attempt.
    this.#settlers.watch(
      attempt,
      result instanceof Promise && result.constructor === Promise ? result : Promise.resolve(result),
    );
  }

  #release(attempt: Attempt, now: number): void {
    if (attempt.timerIndex !== -1) this.#timeouts.remove(attempt);
    if (attempt.prev === undefined) this.#running = attempt.next;
    else attempt.prev.next = attempt.next;
    if (attempt.next !== undefined) attempt.next.prev = attempt.prev;
    attempt.prev = undefined;
    attempt.next = undefined;
    this.#active -= 1;
    this.#metrics.released(now, this.#active);
    if (this.#active === 0 && this.#settledWaiters.length > 0) {
      for (const wake of this.#settledWaiters.splice(0)) wake();
    }
  }

  #onSettled(attempt: Attempt, value: unknown, error: unknown, failed: boolean): void {
    const now = performance.now();
    this.#release(attempt, now);
    // Timed out or aborted before it settled: no answer came, so its duration is a stall, not the latency a
    // rest keeps the rate by (a 2 s timeout at 0.42 would rest 2.7 s more and idle a busy lease).
    const answered = !attempt.detached;
    if (answered) {
      // Stryker disable next-line BooleanLiteral: a settled attempt is off the running list and the timer: nothing reads its flag again
      attempt.detached = true;
      const task = attempt.task;
      const durationMs = now - attempt.startedAt;
      if (!failed) {
        this.#metrics.attemptFinished(durationMs, undefined);
        this.#breaker?.record(false, attempt.probe, now);
        this.#succeed(task, value, attempt, now, durationMs);
      } else {
        this.#attemptFailed(attempt, error, durationMs);
      }
    }
    // The budget hands the freed slot to a waiting pool before this pool competes for it again; only now,
    // once the breaker has seen this outcome, so a failure that opens it also stops the next queued task.
    this.#member?.release();
    if (this.#duty < 1 && answered) this.#rest(now - attempt.startedAt, now);
    this.#pump(now);
  }

  /** Fractional concurrency: the slot an attempt of `durationMs` used stays taken for its share of idle time. */
  #rest(durationMs: number, now: number): void {
    const restMs = restFor(durationMs, this.#duty);
    if (!(restMs > 0)) return;
    this.#resting += 1;
    const rest: Rest = { durationMs, finishedAt: now, endsAt: now + restMs, timer: undefined };
    this.#rests.add(rest);
    // Not unref'd: queued work waiting for this slot must keep the process alive, as a retry's backoff does.
    rest.timer = setTimeout(() => this.#endRest(rest), restMs);
  }

  #endRest(rest: Rest): void {
    if (!this.#rests.delete(rest)) return;
    this.#resting -= 1;
    this.#pump();
  }

  /**
   * A rest enforces the duty its attempt ended under; once the duty is raised (a new lease granting more,
   * a governor recovering) it ends where the new duty would have ended it: at once, or sooner. Without
   * this a rest from a tiny grant (63 x a slow attempt at 1/64) outlived it and left the next lease of the
   * same pool idle for seconds. A lowered duty never lengthens a rest already running.
   */
  #shortenRests(now: number): void {
    for (const rest of this.#rests) {
      const endsAt = rest.finishedAt + restFor(rest.durationMs, this.#duty);
      if (endsAt >= rest.endsAt) continue;
      clearTimeout(rest.timer);
      if (endsAt <= now) {
        this.#rests.delete(rest);
        this.#resting -= 1;
        continue;
      }
      rest.endsAt = endsAt;
      rest.timer = setTimeout(() => this.#endRest(rest), Math.ceil(endsAt - now));
    }
  }

  #onTimeout(attempt: Attempt): void {
    if (attempt.detached) return;
    attempt.detached = true;
    const error = new TaskTimeoutError(attempt.timeoutMs);
    attempt.abort(error);
    this.#attemptFailed(attempt, error, performance.now() - attempt.startedAt);
    // The slot stays held until the work settles, so nothing new can start here.
  }

  #attemptFailed(attempt: Attempt, error: unknown, durationMs: number): void {
    const task = attempt.task;
    this.#metrics.attemptFinished(durationMs, error);
    const retryable = isRetryableError(error, this.#options.retryableErrors);
    this.#breaker?.record(retryable, attempt.probe, performance.now());
    const allowed = task.extras?.retries ?? this.#options.retries;
    const willRetry =
      retryable &&
      // Stryker disable next-line ConditionalExpression: an attempt fails only while its task is RUNNING (abort and stop detach it, and a timeout fails it first)
      task.state === RUNNING &&
      task.attempts <= allowed &&
      !this.#stopped &&
      // Stryker disable next-line ConditionalExpression: a caller's abort detaches the attempt at once (one synchronous listener), so a failure seen here has no aborted signal
      task.extras?.signal?.aborted !== true;
    if (this.#events.has['pool:taskError']) {
      this.#events.emit('pool:taskError', {
        id: task.id,
        attempt: attempt.attempt,
        error,
        willRetry,
        durationMs,
      });
    }
    if (willRetry) this.#scheduleRetry(task, error, attempt.attempt);
    else if (task.state === RUNNING) this.#failTask(task, error);
  }

  #scheduleRetry(task: Task, error: unknown, attempt: number): void {
    this.#retries += 1;
    const extras = task.needExtras();
    const delayMs = computeBackoff(this.#options, attempt, extras.lastDelay);
    extras.lastDelay = delayMs;
    extras.current = undefined;
    if (this.#events.has['pool:taskRetry']) {
      this.#events.emit('pool:taskRetry', { id: task.id, attempt, error, delayMs });
    }
    task.state = BACKOFF;
    this.#delayed += 1;
    const entry = new BackoffEntry(task, performance.now() + delayMs);
    extras.backoff = entry;
    if (delayMs <= 0) this.#onBackoffDone(entry);
    else this.#backoffs.add(entry);
  }

  #onBackoffDone(entry: BackoffEntry): void {
    const task = entry.task;
    if (task.state !== BACKOFF) return;
    this.#delayed -= 1;
    task.extras!.backoff = undefined;
    task.state = QUEUED;
    task.enqueuedAt = performance.now();
    this.#queue.push(task);
    this.#pump();
  }

  /** The caller's signal aborted. */
  #abortTask(task: Task): void {
    const extras = task.extras!;
    // Stryker disable next-line OptionalChaining: only tasks with a signal are ever aborted by one
    const error = new TaskAbortedError('task aborted by its signal', { cause: extras.signal?.reason });
    switch (task.state) {
      case QUEUED:
        this.#queue.remove(task);
        break;
      case BACKOFF:
        if (extras.backoff !== undefined) this.#backoffs.remove(extras.backoff);
        extras.backoff = undefined;
        this.#delayed -= 1;
        break;
      case RUNNING: {
        const attempt = extras.current;
        // Stryker disable next-line LogicalOperator: a RUNNING task always has a current attempt, never detached (timeouts move the task on at once), so || and && agree
        if (attempt !== undefined && !attempt.detached) {
          attempt.detached = true;
          attempt.abort(error);
          // A probe whose caller gave up proves nothing: give it back, or half-open waits for it forever.
          if (attempt.probe) this.#breaker!.cancelProbe();
        }
        break;
      }
      default:
        return;
    }
    this.#failTask(task, error);
    this.#pump();
  }

  #succeed(task: Task, value: unknown, attempt: Attempt, now: number, durationMs: number): void {
    task.state = DONE;
    this.#processed += 1;
    this.#metrics.taskSettled(now);
    if (task.extras !== undefined) this.#cleanup(task, task.extras);
    task.resolve(value);
    if (this.#events.has['pool:taskCompleted']) {
      this.#events.emit('pool:taskCompleted', {
        id: task.id,
        attempt: attempt.attempt,
        queueWaitMs: attempt.startedAt - task.enqueuedAt,
        durationMs,
      });
    }
  }

  #failTask(task: Task, error: unknown): void {
    if (task.state === DONE) return;
    task.state = DONE;
    this.#errors += 1;
    this.#metrics.taskSettled(performance.now());
    if (task.extras !== undefined) this.#cleanup(task, task.extras);
    // Marked handled first: a caller that ignores the promise must not crash the process. Callers that
    // await it still get the rejection.
    // Stryker disable next-line OptionalChaining: every task gets its promise in enqueue, before it can fail
    task.promise?.catch(noop);
    task.resolve(rejectingThenable(error));
  }

  #cleanup(task: Task, extras: TaskExtras): void {
    this.#signals.leave(extras);
    // Stryker disable next-line OptionalChaining: enqueue sets dedupKey only when #dedup exists, so #dedup is defined here
    if (extras.dedupKey !== undefined) this.#dedup?.settle(extras.dedupKey, task.promise!);
    extras.current = undefined;
  }

  #isIdle(): boolean {
    return this.#queue.size === 0 && this.#active === 0 && this.#delayed === 0;
  }

  #checkIdle(): void {
    if (!this.#busy || !this.#isIdle()) return;
    this.#busy = false;
    for (const wake of this.#idleWaiters.splice(0)) wake();
    this.#emitDrained();
  }

  #emitDrained(): void {
    if (this.#events.has['pool:drained']) {
      this.#events.emit('pool:drained', { processedCount: this.#processed, errorCount: this.#errors });
    }
  }

  #onCircuitChange(state: CircuitState): void {
    // No pump here: a breaker closes only on a probe's success, in #onSettled, whose own #pump then starts
    // the tasks that waited behind the probes (breaker-recovery.test.ts).
    if (this.#events.has['pool:circuitStateChange']) this.#events.emit('pool:circuitStateChange', { state });
  }
}

/** One slot's rest after an attempt under fractional concurrency. */
interface Rest {
  readonly durationMs: number;
  readonly finishedAt: number;
  endsAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The rest after an attempt of `durationMs` at `duty`: busy `duty` of the time. Rounded up (timers fire on
 * whole milliseconds; a rest cut short by rounding would oversend). */
function restFor(durationMs: number, duty: number): number {
  return Math.ceil(durationMs * (1 / duty - 1) - 1e-6);
}
