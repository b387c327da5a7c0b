import { describe, expect, it } from 'vitest';
import * as api from '../../../lib/index.js';
import { S3IngestError } from '../../../lib/index.js';
import * as pool from '../../../lib/pool/index.js';

describe('pool public API', () => {
  it('is re-exported from lib/index.ts', () => {
    expect(api.ExecutorPool).toBe(pool.ExecutorPool);
    expect(api.ConcurrencyBudget).toBe(pool.ConcurrencyBudget);
    expect(api.isRetryableError).toBe(pool.isRetryableError);
    expect(api.computeBackoff).toBe(pool.computeBackoff);
    expect(api.TaskTimeoutError).toBe(pool.TaskTimeoutError);
    expect(api.PoolStoppedError).toBe(pool.PoolStoppedError);
    expect(api.QueueFullError).toBe(pool.QueueFullError);
    expect(api.CircuitOpenError).toBe(pool.CircuitOpenError);
    expect(api.TaskAbortedError).toBe(pool.TaskAbortedError);
    // The companions a service composes a pool with, and bulk feeding over its public face.
    expect(api.circuitBreaker).toBe(pool.circuitBreaker);
    expect(api.deduplication).toBe(pool.deduplication);
    expect(api.autotune).toBe(pool.autotune);
    expect(api.processWithPool).toBe(pool.processWithPool);
  });

  it('throws errors with stable names that extend S3IngestError', () => {
    const errors = [
      new pool.TaskTimeoutError(5),
      new pool.TaskAbortedError(),
      new pool.PoolStoppedError(),
      new pool.QueueFullError(3),
      new pool.CircuitOpenError(100),
    ];
    expect(errors.map((e) => e.name)).toEqual([
      'TaskTimeoutError',
      'TaskAbortedError',
      'PoolStoppedError',
      'QueueFullError',
      'CircuitOpenError',
    ]);
    for (const error of errors) expect(error).toBeInstanceOf(S3IngestError);
  });
});
