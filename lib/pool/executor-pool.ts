import { AttemptRunner } from './attempt-runner.js';
import type { Admission, CircuitState, PoolBreaker, PoolDeduplication, PoolTuner } from './companions.js';
import type { BudgetMember } from './concurrency-budget.js';
import { CircuitOpenError, PoolStoppedError, QueueFullError, TaskAbortedError } from './errors.js';
import { PoolEventEmitter, type PoolEventName, type PoolListener } from './events.js';
import {
  assertCompanions,
  type ExecutorPoolOptions,
  type ResolvedPoolOptions,
  resolvePoolOptions,
  startingConcurrency,
} from './options.js';
import { PacedQueue } from './paced-queue.js';
import { type AggregateMetrics, type DetailedMetrics, PoolMetrics, type PoolStats } from './pool-metrics.js';
import { isRetryableError, retryBackoff } from './retry-policy.js';
import { RetryWaits } from './retry-waits.js';
import { SignalGroups } from './signal-groups.js';
import { SlotRests } from './slot-rests.js';
import { type StartIntervalOptions, StartPacer } from './start-pacer.js';
import type { EnqueueOptions, TaskContext, TaskFn } from './task.js';
import { attachPromise, rejected, rejectTask } from './task-promise.js';
import { type Attempt, BACKOFF, DONE, QUEUED, RUNNING, Task, TaskExtras } from './task-state.js';
import { assertFractionalConcurrency, invalidEnqueueOption } from './validation.js';
import { Waiters } from './waiters.js';

const NO_DEDUPLICATION =
  'dedupKey needs a pool with deduplication: new ExecutorPool({ deduplication: deduplication() })';

/**
 * A bounded, prioritised executor with retries, per-attempt timeouts, a shared concurrency budget and
 * constant-memory metrics. This file is the scheduler: the task state machine (queue -> running -> backoff ->
 * done) and slot accounting. Its parts live in their own files: running attempts (attempt-runner.ts), the
 * start interval (start-pacer.ts), fractional concurrency's rests (slot-rests.ts), retry waits
 * (retry-waits.ts). A circuit breaker, deduplication and an autotuner are companions a service composes
 * through the options (companions.ts); bulk feeding (`processWithPool`, process.ts) sits on top of the pool's
 * public face. A pool built without them loads none of their code; see lib/pool/README.md.
 */
export class ExecutorPool {
  readonly #options: ResolvedPoolOptions;
  readonly #queue = new PacedQueue<Task>();
  readonly #runner = new AttemptRunner(
    (attempt, value, error, failed) => this.#onSettled(attempt, value, error, failed),
    (attempt, error) => this.#attemptFailed(attempt, error, performance.now() - attempt.startedAt),
  );
  readonly #retryWaits: RetryWaits;
  readonly #signals = new SignalGroups<TaskExtras>((extras) => this.#abortTask(extras.task));
  readonly #events = new PoolEventEmitter();
  readonly #metrics = new PoolMetrics();
  readonly #breaker: PoolBreaker | undefined;
  readonly #member: BudgetMember | undefined;
  readonly #dedup: PoolDeduplication | undefined;
  #cap: number;
  /** What `setConcurrency` was given: `#cap` slots, each busy at most concurrency / cap of the time. */
  #concurrency: number;
  #active = 0;
  /** Slots resting after an attempt (fractional concurrency): they count against `#cap` until they end. */
  readonly #rests = new SlotRests(() => this.#pump());
  readonly #pacer = new StartPacer(() => this.#pump());
  #seq = 0;
  #paused: boolean;
  #stopped = false;
  #processed = 0;
  #errors = 0;
  #retries = 0;
  /** Work arrived since the last time the pool was idle: the next idle moment emits `pool:drained`. */
  #busy = false;
  readonly #idleWaiters = new Waiters();
  readonly #settledWaiters = new Waiters();
  readonly #roomWaiters = new Waiters();
  readonly #autotuner: PoolTuner | undefined;

  constructor(options: ExecutorPoolOptions = {}) {
    assertCompanions(options);
    const concurrency = startingConcurrency(options);
    this.#cap = concurrency;
    this.#concurrency = concurrency;
    this.#options = resolvePoolOptions(options);
    this.#retryWaits = new RetryWaits(retryBackoff(this.#options), (task) => this.#requeue(task));
    this.#paused = options.paused ?? false;
    this.#breaker = options.circuitBreaker?.createBreaker((state) => this.#onCircuitChange(state));
    this.#dedup = options.deduplication?.createDeduplication();
    this.#member = options.budget?.join({ onSlotGranted: () => this.#onSlotGranted() });
    this.#autotuner = options.autotune?.attachTuner(this);
  }

  /** The tuner `autotune` attached (detached by `stop()`), if any. */
  get autotuner(): PoolTuner | undefined {
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

  /** Tasks not running: queued, or waiting out a retry's backoff. */
  get waiting(): number {
    return this.#queue.size + this.#retryWaits.count;
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
    this.#rests.setDuty(n / this.#cap);
    this.#pump();
  }

  /**
   * Spaces attempt starts at least `ms` apart (0: no pacing; the default): a cap on the *rate* of starts on
   * top of the cap on attempts in flight. A rate limit is a rate (`permits / latency`), and a pool that
   * sends it in bursts (several slots freed by quick answers at once) is throttled by a service that admits
   * only a fraction of a second of its rate in a burst, though its average is under the limit; evenly spaced
   * starts at that rate are not refused. Retries and probes are paced alike; tasks enqueued with
   * `paced: false` (reads a service limits apart from writes) start unspaced, and a paced task waiting for
   * its turn holds back only the paced tasks behind it. `options` keep a schedule of slots booked elsewhere
   * (`StartIntervalOptions`), while the pool paces (`ms > 0`).
   * @example pool.setStartInterval(1000 / 45) // at most 45 starts per second
   * @example pool.setStartInterval(1000 / 45, { catchUpMs: 50, starts: 40 }) // 40 booked slots, 50 ms of catch-up
   */
  setStartInterval(ms: number, options?: StartIntervalOptions): void {
    // Called per completed attempt by a governor: only a shorter interval (or more starts) can start
    // something sooner.
    if (this.#pacer.setInterval(ms, options?.catchUpMs, options?.starts, options?.withinMs)) this.#pump();
  }

  /** The least ms between two attempt starts (0: none). */
  get startInterval(): number {
    return this.#pacer.interval;
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
      if (this.#dedup === undefined) {
        if (options.dedupKey !== undefined) return rejected(new TypeError(NO_DEDUPLICATION));
      } else {
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
    const task = new Task(fn as TaskFn<unknown>, options?.priority ?? 0, ++this.#seq);
    if (options?.paced === false) task.paced = false;
    const promise = attachPromise(task);
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
      this.#active + this.#rests.count < this.#cap &&
      this.#breaker === undefined &&
      this.#member === undefined &&
      (this.#pacer.interval === 0 || !task.paced)
    ) {
      // Nothing waits and a slot is free: skip the queue.
      this.#start(task, false, now, now);
    } else {
      this.#queue.push(task, now);
      if (this.#events.has['pool:taskQueued'])
        this.#events.emit('pool:taskQueued', { id: task.id, waiting: this.waiting });
      // With every slot taken, a pump would start nothing: only its offer of room to waiting producers is left.
      if (this.#active + this.#rests.count < this.#cap) this.#pump();
      else this.#offerRoom();
    }
    return promise as Promise<T>;
  }

  /** Resolves when `enqueue` would no longer refuse a task for a full queue (at once if it would not now), or at `stop()`. */
  onQueueRoom(): Promise<void> {
    if (!this.isQueueFull || this.#stopped) return Promise.resolve();
    const room = this.#roomWaiters.wait();
    this.#offerRoom();
    return room;
  }

  /** Stops starting queued tasks; resolves when every in-flight attempt (timed-out work included) has settled. */
  pause(): Promise<void> {
    this.#paused = true;
    this.#member?.cancelWait();
    if (this.#active === 0) return Promise.resolve();
    return this.#settledWaiters.wait();
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
    return this.#idleWaiters.wait();
  }

  /**
   * Rejects every queued and backing-off task with PoolStoppedError, aborts in-flight signals (their callers
   * are rejected at once; their slots are freed as the work settles) and makes later `enqueue`s reject.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#pacer.cancel();
    this.#autotuner?.detach();
    this.#paused = true;
    this.#member?.cancelWait();
    const error = new PoolStoppedError();
    for (const task of this.#queue.clear()) this.#failTask(task, error);
    for (const task of this.#retryWaits.clear()) this.#failTask(task, error);
    for (let attempt = this.#runner.head; attempt !== undefined; attempt = attempt.next) {
      if (attempt.detached) continue;
      attempt.detached = true;
      attempt.context.abort(error);
      this.#failTask(attempt.task, error);
    }
    this.#dedup?.clear();
    this.#roomWaiters.wakeAll();
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
      this.#active + this.#rests.count < this.#cap &&
      this.#queue.size === 0 &&
      (this.#member === undefined || this.#member.budget.available > 0)
    );
  }

  /**
   * The breaker's word on starting the head of the queue: `'run'`, `'probe'`, or `'wait'` (half-open with its
   * probes out, or nothing left). While the breaker is open, queued tasks are refused here as they come up.
   */
  #admitHead(): Exclude<Admission, 'reject'> {
    const breaker = this.#breaker;
    if (breaker === undefined) return 'run';
    for (;;) {
      const now = performance.now();
      const admission = breaker.admit(now);
      if (admission !== 'reject') return admission;
      this.#failTask(this.#queue.pop()!, new CircuitOpenError(breaker.retryAfter(now)));
      if (this.#queue.available === 0) return 'wait';
    }
  }

  /** Starts queued tasks while slots are free. `now`, when the caller just read the clock, dates the first start. */
  #pump(now = -1): void {
    const queue = this.#queue;
    while (!this.#paused && this.#active + this.#rests.count < this.#cap && queue.size > 0) {
      if (this.#pacer.interval > 0 && queue.pacedSize > 0) {
        if (now < 0) now = performance.now();
        queue.held = this.#pacer.holds(now);
        if (queue.available === 0) break;
      }
      const admission = this.#admitHead();
      if (admission === 'wait') break;
      if (this.#member !== undefined && !this.#member.tryAcquire()) {
        if (admission === 'probe') this.#breaker!.cancelProbe();
        this.#member.waitForSlot();
        return;
      }
      const task = queue.pop()!;
      this.#start(task, admission === 'probe', now >= 0 ? now : performance.now(), queue.poppedQueuedAt);
      // A started task ran its function synchronously: read the clock afresh for the next one.
      now = -1;
    }
    queue.held = false;
    this.#offerRoom();
    if (queue.size === 0) this.#checkIdle();
  }

  /**
   * Wakes `onQueueRoom` waiters once `enqueue` would accept a task. With `maxQueueSize: 0` that is a free
   * slot, not a shorter queue; with a budget, a slot another pool frees: wait in the budget's line for it.
   */
  #offerRoom(): void {
    if (this.#roomWaiters.size === 0) return;
    if (!this.isQueueFull) {
      this.#roomWaiters.wakeAll();
      return;
    }
    // Never wait while the budget has a free slot: its grant would come straight back here, in a loop.
    if (this.#member !== undefined && this.#member.budget.available === 0) this.#member.waitForSlot();
  }

  /** The budget offers this pool a slot (already counted as held); returns whether it was used. */
  #onSlotGranted(): boolean {
    const queue = this.#queue;
    if (!this.#paused && this.#active + this.#rests.count < this.#cap && queue.pacedSize > 0)
      queue.held = this.#pacer.interval > 0 && this.#pacer.holds(performance.now());
    const started = this.#startGranted();
    queue.held = false;
    return started;
  }

  /** `#onSlotGranted` with the queue's `held` set: starts the task it may start now, if any. */
  #startGranted(): boolean {
    if (this.#paused || this.#active + this.#rests.count >= this.#cap || this.#queue.available === 0) {
      // Nothing to start (or not yet: the pace timer pumps), but a producer waiting in `onQueueRoom` may enqueue into this slot once it is back.
      queueMicrotask(() => this.#offerRoom());
      return false;
    }
    const admission = this.#admitHead();
    if (admission === 'wait') {
      // Refused tasks may have emptied the queue: settle the pool's idle state outside the budget's dispatch.
      if (this.#queue.size === 0) queueMicrotask(() => this.#pump());
      return false;
    }
    const task = this.#queue.pop()!;
    this.#start(task, admission === 'probe', performance.now(), this.#queue.poppedQueuedAt);
    // Still busy: get back in line (at the back) for the next slot.
    // Stryker disable next-line LogicalOperator,ArithmeticOperator: re-joining the line more often only adds offers, and #onSlotGranted refuses one this pool cannot use and hands it on in the same dispatch
    if (!this.#paused && this.#active + this.#rests.count < this.#cap && this.#queue.size > 0)
      this.#member!.waitForSlot();
    return true;
  }

  /** Starts `task`'s next attempt at `now`; `queuedAt` is when it entered the queue for it. */
  #start(task: Task, probe: boolean, now: number, queuedAt: number): void {
    if (task.paced) this.#pacer.started(now);
    task.state = RUNNING;
    task.attempts += 1;
    const extras = task.extras;
    const timeout = extras?.timeout ?? this.#options.timeout;
    this.#active += 1;
    const attempt = this.#runner.start(task, now, queuedAt, probe, timeout);
    if (extras !== undefined) extras.current = attempt;
    const queueWaitMs = now - queuedAt;
    this.#metrics.started(now, queueWaitMs, this.#active);
    if (this.#events.has['pool:taskStarted']) {
      this.#events.emit('pool:taskStarted', {
        id: task.id,
        attempt: attempt.attempt,
        activeCount: this.#active,
        queueWaitMs,
      });
    }
    this.#runner.invoke(attempt);
  }

  #release(attempt: Attempt, now: number): void {
    this.#runner.release(attempt);
    this.#active -= 1;
    this.#metrics.released(now, this.#active);
    if (this.#active === 0) this.#settledWaiters.wakeAll();
  }

  #onSettled(attempt: Attempt, value: unknown, error: unknown, failed: boolean): void {
    const now = performance.now();
    this.#release(attempt, now);
    // Timed out or aborted before it settled: no answer came, so its duration is a stall, not the latency a
    // rest keeps the rate by (a 2 s timeout at 0.42 would rest 2.7 s more and idle a busy lease). The rest
    // starts before the outcome is handled: a task a listener starts, or a retry with no delay, finds the
    // slot resting.
    const answered = !attempt.detached;
    if (answered) {
      if (this.#rests.resting) this.#rests.rest(now - attempt.startedAt, now);
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
    // Listeners ran above, for as long as they took: the next start is dated after them, not before.
    this.#pump(this.#events.listening ? -1 : now);
  }

  #attemptFailed(attempt: Attempt, error: unknown, durationMs: number): void {
    const task = attempt.task;
    this.#metrics.attemptFinished(durationMs, error);
    const retryable = this.#isRetryable(error);
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
        paced: task.paced,
      });
    }
    // A listener may have answered the task's caller (its abort, or `stop()`): then nothing more is done.
    if (task.state !== RUNNING) return;
    if (!willRetry) this.#failTask(task, error);
    // Stopped by a listener: the task would have waited out its backoff, which `stop()` ends with this error.
    else if (this.#stopped) this.#failTask(task, new PoolStoppedError());
    else this.#scheduleRetry(task, error, attempt.attempt);
  }

  /** The retry policy's verdict; an error that throws when read (a getter, a revoked Proxy) is not retryable. */
  #isRetryable(error: unknown): boolean {
    try {
      return isRetryableError(error, this.#options.retryableErrors);
    } catch {
      return false;
    }
  }

  #scheduleRetry(task: Task, error: unknown, attempt: number): void {
    this.#retries += 1;
    const delayMs = this.#retryWaits.nextDelay(task);
    task.extras!.current = undefined;
    if (this.#events.has['pool:taskRetry']) {
      this.#events.emit('pool:taskRetry', { id: task.id, attempt, error, delayMs });
      // As in #attemptFailed: a listener's abort answered the caller, a listener's stop() ends the wait.
      if (task.state !== RUNNING) return;
      if (this.#stopped) {
        this.#failTask(task, new PoolStoppedError());
        return;
      }
    }
    task.state = BACKOFF;
    this.#retryWaits.wait(task, delayMs, performance.now());
  }

  /** A retrying task's backoff ended: back in the queue, with its priority. */
  #requeue(task: Task): void {
    task.state = QUEUED;
    this.#queue.push(task, performance.now());
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
        this.#retryWaits.cancel(task);
        break;
      case RUNNING: {
        const attempt = extras.current;
        // Stryker disable next-line LogicalOperator: a RUNNING task always has a current attempt, never detached (timeouts move the task on at once), so || and && agree
        if (attempt !== undefined && !attempt.detached) {
          attempt.detached = true;
          attempt.context.abort(error);
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
        queueWaitMs: attempt.startedAt - attempt.queuedAt,
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
    rejectTask(task, error);
  }

  #cleanup(task: Task, extras: TaskExtras): void {
    this.#signals.leave(extras);
    // Stryker disable next-line OptionalChaining: enqueue sets dedupKey only when #dedup exists, so #dedup is defined here
    if (extras.dedupKey !== undefined) this.#dedup?.settle(extras.dedupKey, task.promise!);
    extras.current = undefined;
  }

  #isIdle(): boolean {
    return this.#queue.size === 0 && this.#active === 0 && this.#retryWaits.count === 0;
  }

  #checkIdle(): void {
    if (!this.#busy || !this.#isIdle()) return;
    this.#busy = false;
    this.#idleWaiters.wakeAll();
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
