// Helpers of the PrefixRates tests: tenant objects as the runner hands them over, on real pools or on a
// stub that plays S3's answers through the events an ExecutorPool emits.
import { EventEmitter } from 'node:events';
import { afterEach } from 'vitest';
import type { RateRunWindow } from '../../../../../lib/ingest/handler/run/prefix-rates.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';

const pools: ExecutorPool[] = [];
afterEach(() => {
  for (const p of pools.splice(0)) p.stop();
});

/** A real pool (stopped after the test), its concurrency set by the run. */
export function pool(): ExecutorPool {
  const p = new ExecutorPool({ concurrency: 1, retries: 2, retryDelay: 1, maxRetryDelay: 1 });
  pools.push(p);
  return p;
}

/** The invocation's bounds: a cutoff `ms` away. */
export function window(ms = 5_000, signal = new AbortController().signal): RateRunWindow {
  return { deadline: Date.now() + ms, signal };
}

/** S3's 503 SlowDown as the SDK shows it. */
export const slowDown = () =>
  Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });

/** A pool stub that records its size and emits what a test plays (a write accepted, or refused). */
export class StubPool extends EventEmitter {
  concurrency = 0;
  readonly waiting = 0;
  setConcurrency(n: number): void {
    this.concurrency = n;
  }
  setStartInterval(): void {}
  throttled(): void {
    this.emit('pool:taskError', {
      id: 1,
      attempt: 1,
      error: slowDown(),
      willRetry: true,
      durationMs: 20,
      paced: true,
    });
  }
  succeeded(): void {
    this.emit('pool:taskCompleted', { id: 1, attempt: 1, queueWaitMs: 0, durationMs: 20 });
  }
}

/** A tenant object as the runner hands it over. */
export function tenant<P extends ExecutorPool | StubPool>(name: string, writes: number, p: P) {
  return { tenant: name, writes, pool: p };
}
