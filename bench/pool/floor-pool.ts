// The floor for bench:pool-closure: the least a priority-honouring pool must do per task, and nothing else.
// Not a product: no retries, timeouts, context, events, metrics, ids, signals or validation. It keeps the
// concurrency cap, starts the highest priority first (FIFO among equals) and settles one promise per task.
// Its ratio to fastq bounds what any pool that honours priorities can reach in the same pattern: what the
// ExecutorPool loses beyond it is the cost of its features.

let capturedResolve: (value: unknown) => void = () => {};
let capturedReject: (error: unknown) => void = () => {};
/** One executor for every promise: no closure per task. */
function capture(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

class FloorTask {
  readonly resolve = capturedResolve;
  readonly reject = capturedReject;
  constructor(readonly fn: () => Promise<unknown>) {}
}

/** One per running slot, reused: the callbacks a task's work settles through, made once. */
class Slot {
  task: FloorTask | undefined = undefined;
  nextFree: Slot | undefined = undefined;
  readonly fulfilled: (value: unknown) => void;
  readonly rejected: (error: unknown) => void;
  constructor(pool: FloorPool) {
    this.fulfilled = (value) => pool.settled(this, value, false);
    this.rejected = (error) => pool.settled(this, error, true);
  }
}

interface Level {
  readonly priority: number;
  items: (FloorTask | undefined)[];
  head: number;
}

export class FloorPool {
  /** Levels by descending priority; an emptied level stays (the bench uses ten priorities). */
  readonly #levels: Level[] = [];
  #queued = 0;
  #active = 0;
  #free: Slot | undefined = undefined;

  constructor(readonly concurrency: number) {}

  enqueue<T>(fn: () => Promise<T>, priority: number): Promise<T> {
    const promise = new Promise(capture) as Promise<T>;
    const task = new FloorTask(fn);
    if (this.#active < this.concurrency) this.#start(task);
    else {
      this.#level(priority).items.push(task);
      this.#queued += 1;
    }
    return promise;
  }

  /** Called by a `Slot` when its task's work settles. */
  settled(slot: Slot, outcome: unknown, failed: boolean): void {
    const task = slot.task!;
    slot.task = undefined;
    slot.nextFree = this.#free;
    this.#free = slot;
    this.#active -= 1;
    if (failed) task.reject(outcome);
    else task.resolve(outcome);
    if (this.#queued > 0) this.#start(this.#pop());
  }

  #level(priority: number): Level {
    const levels = this.#levels;
    let i = 0;
    while (i < levels.length && levels[i]!.priority > priority) i += 1;
    if (levels[i]?.priority !== priority) levels.splice(i, 0, { priority, items: [], head: 0 });
    return levels[i]!;
  }

  #start(task: FloorTask): void {
    this.#active += 1;
    let slot = this.#free;
    if (slot === undefined) slot = new Slot(this);
    else this.#free = slot.nextFree;
    slot.task = task;
    task.fn().then(slot.fulfilled, slot.rejected);
  }

  #pop(): FloorTask {
    this.#queued -= 1;
    for (const level of this.#levels) {
      if (level.head === level.items.length) continue;
      const task = level.items[level.head]!;
      level.items[level.head] = undefined;
      level.head += 1;
      if (level.head === level.items.length) {
        level.items = [];
        level.head = 0;
      }
      return task;
    }
    throw new Error('FloorPool: a queued count without a queued task');
  }
}
