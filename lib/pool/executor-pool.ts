import { Autotuner } from './autotune/autotuner.js';
import { CircuitBreaker, type CircuitState } from './circuit-breaker.js';
import type { BudgetMember } from './concurrency-budget.js';
import { DeadlineTimer } from './deadline-timer.js';
import { AbortError, CircuitOpenError, PoolStoppedError, QueueFullError, TimeoutError } from './errors.js';
import { PoolEventEmitter, type PoolEventName, type PoolListener } from './events.js';
import {
  assertConcurrency,
  type DeduplicationOptions,
  type EnqueueOptions,
  type ExecutorPoolOptions,
  POOL_DEFAULTS,
  type ResolvedPoolOptions,
  resolvePoolOptions,
  type TaskContext,
  type TaskFn,
} from './options.js';
import { type AggregateMetrics, type DetailedMetrics, PoolMetrics, type PoolStats } from './pool-metrics.js';
import { PriorityQueue } from './priority-queue.js';
import { computeBackoff, isRetryableError } from './retry-policy.js';

const QUEUED = 0;
const RUNNING = 1;
const BACKOFF = 2;
const DONE = 3;

const noop = (): void => {};

/** Rarely needed per-task data, allocated only when a task uses one of these features. */
interface TaskExtras {
  id: string | undefined;
  timeout: number | undefined;
  retries: number | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  dedupKey: string | undefined;
  dedupAt: number;
  lastDelay: number;
  backoff: BackoffEntry | undefined;
  current: Attempt | undefined;
}

/**
 * A queued task. Kept deliberately small (it is what a long queue is made of): the caller's promise, its
 * resolve function (reject goes through resolve, so V8 can drop the reject function) and heap bookkeeping.
 */
class Task {
  queueIndex = -1;
  attempts = 0;
  state = QUEUED;
  resolve: (value: unknown) => void = noop;
  promise: Promise<unknown> | undefined = undefined;

  constructor(
    readonly fn: TaskFn<unknown>,
    readonly priority: number,
    readonly seq: number,
    public enqueuedAt: number,
    public extras: TaskExtras | undefined,
  ) {}

  get id(): string {
    return this.extras?.id ?? `${this.seq}`;
  }
}

/** A retrying task waiting out its backoff (on the shared backoff timer). */
class BackoffEntry {
  timerIndex = -1;
  constructor(
    readonly task: Task,
    public deadline: number,
  ) {}
}

/** One attempt of a task; also the context handed to the task function. */
class Attempt implements TaskContext {
  deadline = Number.POSITIVE_INFINITY;
  timerIndex = -1;
  /** The caller was already answered (timeout, abort, stop); the attempt only holds its slot until it settles. */
  detached = false;
  prev: Attempt | undefined = undefined;
  next: Attempt | undefined = undefined;
  #controller: AbortController | undefined = undefined;
  #abortReason: unknown = undefined;

  constructor(
    readonly task: Task,
    readonly attempt: number,
    readonly startedAt: number,
    readonly probe: boolean,
    readonly timeoutMs: number,
  ) {}

  get id(): string {
    return this.task.id;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#controller !== undefined) this.#controller.abort(reason);
    else this.#abortReason = reason;
  }
}

let capturedResolve: (value: unknown) => void = noop;
// One shared executor: `new Promise(capture)` allocates no closure per task.
const capture = (resolve: (value: unknown) => void): void => {
  capturedResolve = resolve;
};

function rejectingThenable(error: unknown): PromiseLike<never> {
  return {
    // biome-ignore lint/suspicious/noThenProperty: a thenable is the point: resolve() adopts its rejection.
    then(_onFulfilled, onRejected) {
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
  return undefined;
}

function rejected<T>(error: unknown): Promise<T> {
  const promise = Promise.reject(error);
  promise.catch(noop);
  return promise;
}

/** Summary of `process()`. Results are handed to `onResult` and never accumulated. */
export interface ProcessSummary {
  /** Items whose task succeeded. */
  processed: number;
  /** Items whose task finally failed. */
  failed: number;
  /** The first failures (up to `keepErrors`), with the item's index in the input. */
  errors: { index: number; error: unknown }[];
}

export interface ProcessOptions<I, R> extends Omit<EnqueueOptions, 'dedupKey' | 'id'> {
  /** Called with each successful result, in completion order. */
  onResult?: (result: R, item: I, index: number) => void;
  /** Called with each final failure, in completion order. */
  onError?: (error: unknown, item: I, index: number) => void;
  /** Items read ahead beyond the pool's concurrency. Default `min(concurrency, maxQueueSize)`. */
  readAhead?: number;
  /** Stop reading input after the first failure (in-flight items still finish). Default `false`. */
  stopOnError?: boolean;
  /** How many failures `errors` keeps. Default `10`. */
  keepErrors?: number;
}

/**
 * A bounded, prioritised executor with retries, per-attempt timeouts, an optional circuit breaker,
 * deduplication, a shared concurrency budget and constant-memory metrics. See lib/pool/README.md.
 */
export class ExecutorPool {
  readonly #options: ResolvedPoolOptions;
  readonly #queue = new PriorityQueue<Task>();
  readonly #timeouts = new DeadlineTimer<Attempt>((attempt) => this.#onTimeout(attempt));
  readonly #backoffs = new DeadlineTimer<BackoffEntry>((entry) => this.#onBackoffDone(entry));
  readonly #events = new PoolEventEmitter();
  readonly #metrics = new PoolMetrics();
  readonly #breaker: CircuitBreaker | undefined;
  readonly #member: BudgetMember | undefined;
  readonly #dedup: Map<string, Task> | undefined;
  readonly #dedupKeyFn: DeduplicationOptions['keyFn'];
  readonly #dedupTtl: number;
  #cap: number;
  #active = 0;
  #delayed = 0;
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
    this.#options = resolvePoolOptions(options);
    this.#paused = options.paused ?? false;
    if (options.circuitBreaker?.enabled) {
      this.#breaker = new CircuitBreaker(options.circuitBreaker, (state) => this.#onCircuitChange(state));
    }
    const dedup = options.deduplication;
    if (dedup?.enabled !== false) this.#dedup = new Map();
    this.#dedupKeyFn = dedup?.enabled !== false ? dedup?.keyFn : undefined;
    this.#dedupTtl = dedup?.ttl ?? POOL_DEFAULTS.deduplicationTtl;
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

  /** The current cap on in-flight attempts. */
  get concurrency(): number {
    return this.#cap;
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
   */
  setConcurrency(n: number): void {
    assertConcurrency(n);
    this.#cap = n;
    this.#pump();
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
    let extras: TaskExtras | undefined;
    if (options !== undefined) {
      const invalid = invalidEnqueueOption(options);
      if (invalid !== undefined) return rejected(new RangeError(invalid));
      const signal = options.signal;
      if (signal?.aborted)
        return rejected(new AbortError('task aborted before it was queued', { cause: signal.reason }));
      let dedupKey = options.dedupKey;
      if (this.#dedup !== undefined) {
        if (dedupKey === undefined && this.#dedupKeyFn !== undefined) {
          dedupKey = this.#dedupKeyFn({ fn: fn as TaskFn<unknown>, options });
        }
        if (dedupKey !== undefined) {
          const leader = this.#dedup.get(dedupKey);
          if (leader !== undefined && performance.now() - leader.extras!.dedupAt < this.#dedupTtl) {
            return this.#follow(leader, signal) as Promise<T>;
          }
        }
      } else {
        dedupKey = undefined;
      }
      if (
        signal !== undefined ||
        dedupKey !== undefined ||
        options.id !== undefined ||
        options.timeout !== undefined ||
        options.retries !== undefined
      ) {
        extras = {
          id: options.id,
          timeout: options.timeout,
          retries: options.retries,
          signal,
          onAbort: undefined,
          dedupKey,
          dedupAt: 0,
          lastDelay: 0,
          backoff: undefined,
          current: undefined,
        };
      }
    }
    const now = performance.now();
    if (this.#breaker?.rejects(now)) return rejected(new CircuitOpenError(this.#breaker.retryAfter(now)));
    if (this.#queue.size >= this.#options.maxQueueSize && !this.#canStartNow()) {
      return rejected(new QueueFullError(this.#options.maxQueueSize));
    }
    const task = new Task(fn as TaskFn<unknown>, options?.priority ?? 0, ++this.#seq, now, extras);
    const promise = new Promise(capture);
    task.resolve = capturedResolve;
    task.promise = promise;
    if (extras !== undefined) {
      if (extras.signal !== undefined) {
        extras.onAbort = () => this.#abortTask(task);
        extras.signal.addEventListener('abort', extras.onAbort, { once: true });
      }
      if (extras.dedupKey !== undefined) {
        extras.dedupAt = now;
        this.#dedup!.set(extras.dedupKey, task);
      }
    }
    this.#busy = true;
    if (
      this.#queue.size === 0 &&
      !this.#paused &&
      this.#active < this.#cap &&
      this.#breaker === undefined &&
      this.#member === undefined
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
   * Feeds `input` through the pool with back-pressure: an item is read only while fewer than
   * `concurrency + readAhead` of this call's items are unfinished. Resolves to counts when every item
   * read has settled; rejects with PoolStoppedError / AbortError if the pool stopped or `signal` aborted
   * before the input was exhausted, or with the error a callback threw.
   */
  async process<I, R>(
    input: Iterable<I> | AsyncIterable<I>,
    fn: (item: I, ctx: TaskContext) => Promise<R> | R,
    options: ProcessOptions<I, R> = {},
  ): Promise<ProcessSummary> {
    if (this.#stopped) throw new PoolStoppedError();
    const { onResult, onError, readAhead, stopOnError = false, keepErrors = 10, ...enqueueOptions } = options;
    const signal = enqueueOptions.signal;
    const summary: ProcessSummary = { processed: 0, failed: 0, errors: [] };
    let inFlight = 0;
    let wake: (() => void) | undefined;
    let callbackError: { error: unknown } | undefined;
    const settledOne = () => {
      inFlight -= 1;
      const w = wake;
      wake = undefined;
      w?.();
    };
    const waitForOne = () =>
      new Promise<void>((resolve) => {
        wake = resolve;
      });
    const limit = () => this.#cap + Math.min(readAhead ?? this.#cap, this.#options.maxQueueSize);
    const isAsync = Symbol.asyncIterator in input;
    const iterator = isAsync
      ? (input as AsyncIterable<I>)[Symbol.asyncIterator]()
      : (input as Iterable<I>)[Symbol.iterator]();
    let index = 0;
    let exhausted = false;
    try {
      for (;;) {
        while (inFlight >= limit()) await waitForOne();
        if (this.#stopped || signal?.aborted || callbackError !== undefined) break;
        if (stopOnError && summary.failed > 0) break;
        while (this.#queue.size >= this.#options.maxQueueSize && !this.#canStartNow()) {
          await new Promise<void>((resolve) => this.#roomWaiters.push(resolve));
          if (this.#stopped) break;
        }
        const step = isAsync ? await (iterator as AsyncIterator<I>).next() : (iterator as Iterator<I>).next();
        if (step.done) {
          exhausted = true;
          break;
        }
        const item = step.value;
        const i = index++;
        inFlight += 1;
        this.enqueue((ctx) => fn(item, ctx), enqueueOptions).then(
          (result) => {
            summary.processed += 1;
            try {
              onResult?.(result, item, i);
            } catch (error) {
              callbackError ??= { error };
            }
            settledOne();
          },
          (error: unknown) => {
            summary.failed += 1;
            if (summary.errors.length < keepErrors) summary.errors.push({ index: i, error });
            try {
              onError?.(error, item, i);
            } catch (callbackFailure) {
              callbackError ??= { error: callbackFailure };
            }
            settledOne();
          },
        );
      }
    } finally {
      if (!exhausted) await iterator.return?.();
      while (inFlight > 0) await waitForOne();
    }
    if (callbackError !== undefined) throw callbackError.error;
    if (!exhausted && !(stopOnError && summary.failed > 0)) {
      if (signal?.aborted) throw new AbortError('process() aborted', { cause: signal.reason });
      if (this.#stopped) throw new PoolStoppedError();
    }
    return summary;
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
      this.#active < this.#cap &&
      this.#queue.size === 0 &&
      (this.#member === undefined || this.#member.budget.available > 0)
    );
  }

  #pump(): void {
    const queue = this.#queue;
    while (!this.#paused && this.#active < this.#cap && queue.size > 0) {
      let probe = false;
      if (this.#breaker !== undefined) {
        const admission = this.#breaker.admit(performance.now());
        if (admission === 'wait') return;
        if (admission === 'reject') {
          const task = queue.pop()!;
          this.#failTask(task, new CircuitOpenError(this.#breaker.retryAfter(performance.now())));
          continue;
        }
        probe = admission === 'probe';
      }
      if (this.#member !== undefined && !this.#member.tryAcquire()) {
        if (probe) this.#breaker!.cancelProbe();
        this.#member.waitForSlot();
        return;
      }
      this.#start(queue.pop()!, probe, performance.now());
    }
    if (this.#roomWaiters.length > 0 && queue.size < this.#options.maxQueueSize) {
      for (const wake of this.#roomWaiters.splice(0)) wake();
    }
    if (queue.size === 0) this.#checkIdle();
  }

  /** The budget offers this pool a slot (already counted as held); returns whether it was used. */
  #onSlotGranted(): boolean {
    if (this.#paused || this.#active >= this.#cap || this.#queue.size === 0) return false;
    let probe = false;
    if (this.#breaker !== undefined) {
      const admission = this.#breaker.admit(performance.now());
      if (admission === 'wait' || admission === 'reject') {
        if (admission === 'reject') queueMicrotask(() => this.#pump());
        return false;
      }
      probe = admission === 'probe';
    }
    this.#start(this.#queue.pop()!, probe, performance.now());
    // Still busy: get back in line (at the back) for the next slot.
    if (!this.#paused && this.#active < this.#cap && this.#queue.size > 0) this.#member!.waitForSlot();
    return true;
  }

  #start(task: Task, probe: boolean, now: number): void {
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
    if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) {
      attempt.deadline = now + timeout;
      this.#timeouts.add(attempt);
    }
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
    const promise = result instanceof Promise ? result : Promise.resolve(result);
    promise.then(
      (value: unknown) => this.#onSettled(attempt, value, undefined, false),
      (error: unknown) => this.#onSettled(attempt, undefined, error, true),
    );
  }

  #release(attempt: Attempt, now: number): void {
    if (attempt.timerIndex >= 0) this.#timeouts.remove(attempt);
    if (attempt.prev === undefined) this.#running = attempt.next;
    else attempt.prev.next = attempt.next;
    if (attempt.next !== undefined) attempt.next.prev = attempt.prev;
    attempt.prev = undefined;
    attempt.next = undefined;
    this.#active -= 1;
    this.#metrics.released(now, this.#active);
    // The budget hands the freed slot to a waiting pool before this pool competes for it again.
    this.#member?.release();
    if (this.#active === 0 && this.#settledWaiters.length > 0) {
      for (const wake of this.#settledWaiters.splice(0)) wake();
    }
  }

  #onSettled(attempt: Attempt, value: unknown, error: unknown, failed: boolean): void {
    const now = performance.now();
    this.#release(attempt, now);
    if (!attempt.detached) {
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
    this.#pump();
  }

  #onTimeout(attempt: Attempt): void {
    if (attempt.detached) return;
    attempt.detached = true;
    const error = new TimeoutError(attempt.timeoutMs);
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
      task.state === RUNNING &&
      task.attempts <= allowed &&
      !this.#stopped &&
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
    const extras = this.#extrasOf(task);
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

  #extrasOf(task: Task): TaskExtras {
    task.extras ??= {
      id: undefined,
      timeout: undefined,
      retries: undefined,
      signal: undefined,
      onAbort: undefined,
      dedupKey: undefined,
      dedupAt: 0,
      lastDelay: 0,
      backoff: undefined,
      current: undefined,
    };
    return task.extras;
  }

  /** The caller's signal aborted. */
  #abortTask(task: Task): void {
    const extras = task.extras!;
    const error = new AbortError('task aborted by its signal', { cause: extras.signal?.reason });
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
        if (attempt !== undefined && !attempt.detached) {
          attempt.detached = true;
          attempt.abort(error);
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
    task.promise?.catch(noop);
    task.resolve(rejectingThenable(error));
  }

  #cleanup(task: Task, extras: TaskExtras): void {
    if (extras.onAbort !== undefined) {
      extras.signal?.removeEventListener('abort', extras.onAbort);
      extras.onAbort = undefined;
    }
    if (extras.dedupKey !== undefined && this.#dedup?.get(extras.dedupKey) === task) {
      this.#dedup.delete(extras.dedupKey);
    }
    extras.current = undefined;
  }

  /** A dedup follower: shares the leader's outcome; its own signal only detaches itself. */
  #follow(leader: Task, signal: AbortSignal | undefined): Promise<unknown> {
    const shared = leader.promise!;
    if (signal === undefined) return shared;
    const follower = new Promise((resolve, reject) => {
      const onAbort = () => reject(new AbortError('task aborted by its signal', { cause: signal.reason }));
      signal.addEventListener('abort', onAbort, { once: true });
      shared.then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
    follower.catch(noop);
    return follower;
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
    if (this.#events.has['pool:circuitStateChange']) this.#events.emit('pool:circuitStateChange', { state });
    if (state === 'closed') queueMicrotask(() => this.#pump());
  }
}
