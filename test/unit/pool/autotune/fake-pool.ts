import type { TunablePool } from '../../../../lib/pool/autotune/index.js';
import {
  PoolEventEmitter,
  type PoolEventName,
  type PoolEvents,
  type PoolListener,
} from '../../../../lib/pool/events.js';
import type { PoolStats } from '../../../../lib/pool/pool-metrics.js';

/** A pool stand-in whose stats and events the test sets by hand, to drive the autotuner's math exactly. */
export class FakePool implements TunablePool {
  readonly events = new PoolEventEmitter();
  concurrency: number;
  activeCount = 0;
  queueSize = 100;
  readonly setCalls: number[] = [];

  constructor(concurrency = 10) {
    this.concurrency = concurrency;
  }

  setConcurrency(n: number): void {
    this.setCalls.push(n);
    this.concurrency = n;
  }

  getStats(): PoolStats {
    return {
      queueSize: this.queueSize,
      activeCount: this.activeCount,
      processedCount: 0,
      errorCount: 0,
      retryCount: 0,
    };
  }

  on<K extends PoolEventName>(event: K, listener: PoolListener<K>): this {
    this.events.on(event, listener);
    return this;
  }

  off<K extends PoolEventName>(event: K, listener: PoolListener<K>): this {
    this.events.off(event, listener);
    return this;
  }

  completed(durationMs: number, attempt = 1): void {
    this.events.emit('pool:taskCompleted', {
      id: 'x',
      attempt,
      queueWaitMs: 0,
      durationMs,
    } satisfies PoolEvents['pool:taskCompleted']);
  }

  failed(error: unknown, durationMs: number, attempt = 1): void {
    this.events.emit('pool:taskError', { id: 'x', attempt, error, willRetry: true, durationMs, paced: true });
  }
}

export function slowDown(): Error {
  return Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $metadata: { httpStatusCode: 503 },
  });
}
