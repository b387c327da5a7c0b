/** A circuit breaker's state (`ExecutorPoolOptions.circuitBreaker`). */
export type CircuitState = 'closed' | 'open' | 'halfOpen';

/** Events of an ExecutorPool and their payloads. Payloads are built only when someone listens. */
export interface PoolEvents {
  /** A task entered the queue (it could not start at once); `waiting` counts it (`ExecutorPool.waiting`). */
  'pool:taskQueued': { id: string; waiting: number };
  /** An attempt started. `activeCount` includes it (and any timed-out work still running). */
  'pool:taskStarted': { id: string; attempt: number; activeCount: number; queueWaitMs: number };
  /** The task succeeded on attempt `attempt`. */
  'pool:taskCompleted': { id: string; attempt: number; queueWaitMs: number; durationMs: number };
  /**
   * An attempt failed (or timed out). `willRetry` tells whether a `pool:taskRetry` follows; `paced` whether
   * the task is spaced by the start interval (`EnqueueOptions.paced`).
   */
  'pool:taskError': {
    id: string;
    attempt: number;
    error: unknown;
    willRetry: boolean;
    durationMs: number;
    paced: boolean;
  };
  /** Attempt `attempt` failed retryably; the task re-enters the queue after `delayMs`, holding no slot. */
  'pool:taskRetry': { id: string; attempt: number; error: unknown; delayMs: number };
  /** Nothing is queued, backing off or running any more. */
  'pool:drained': { processedCount: number; errorCount: number };
  /** The circuit breaker changed state. */
  'pool:circuitStateChange': { state: CircuitState };
}

export type PoolEventName = keyof PoolEvents;
export type PoolListener<K extends PoolEventName> = (payload: PoolEvents[K]) => void;

/**
 * A minimal typed emitter. `has` is a property read, so the pool checks it before building a payload and
 * pays nothing per task for events nobody listens to. A throwing listener does not break the pool: the
 * error is rethrown on a later tick (as Node does for uncaught errors) instead of unwinding pool state.
 */
export class PoolEventEmitter {
  readonly #listeners: { [K in PoolEventName]?: PoolListener<K>[] } = {};
  #count = 0;
  readonly has: Record<PoolEventName, boolean> = {
    'pool:taskQueued': false,
    'pool:taskStarted': false,
    'pool:taskCompleted': false,
    'pool:taskError': false,
    'pool:taskRetry': false,
    'pool:drained': false,
    'pool:circuitStateChange': false,
  };

  on<K extends PoolEventName>(event: K, listener: PoolListener<K>): void {
    const list = (this.#listeners[event] ?? []) as PoolListener<K>[];
    // Copy on write: emitting iterates a snapshot even if a listener unsubscribes itself.
    (this.#listeners as Record<K, PoolListener<K>[]>)[event] = [...list, listener];
    this.has[event] = true;
    this.#count += 1;
  }

  off<K extends PoolEventName>(event: K, listener: PoolListener<K>): void {
    const list = this.#listeners[event] as PoolListener<K>[] | undefined;
    if (list === undefined) return;
    const index = list.indexOf(listener);
    if (index < 0) return;
    const next = list.filter((_, i) => i !== index);
    (this.#listeners as Record<K, PoolListener<K>[]>)[event] = next;
    this.has[event] = next.length > 0;
    this.#count -= 1;
  }

  /** Whether any event has a listener: listener code may run (and take time) inside the pool's steps. */
  get listening(): boolean {
    return this.#count > 0;
  }

  listenerCount(event: PoolEventName): number {
    return this.#listeners[event]?.length ?? 0;
  }

  emit<K extends PoolEventName>(event: K, payload: PoolEvents[K]): void {
    const list = this.#listeners[event] as PoolListener<K>[] | undefined;
    if (list === undefined) return;
    for (const listener of list) {
      try {
        listener(payload);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}
