import { describe, expect, it } from 'vitest';
import * as api from '../../../lib/index.js';
import { S3IngestError } from '../../../lib/index.js';
import * as pool from '../../../lib/pool/index.js';

describe('pool public API', () => {
  it('is re-exported from lib/index.ts', () => {
    for (const name of [
      'ExecutorPool',
      'ConcurrencyBudget',
      'isRetryableError',
      'computeBackoff',
      'TimeoutError',
      'PoolStoppedError',
      'QueueFullError',
      'CircuitOpenError',
      'AbortError',
    ] as const) {
      expect(api[name], name).toBe(pool[name]);
    }
  });

  it('throws errors with stable names that extend S3IngestError', () => {
    const errors = [
      new pool.TimeoutError(5),
      new pool.AbortError(),
      new pool.PoolStoppedError(),
      new pool.QueueFullError(3),
      new pool.CircuitOpenError(100),
    ];
    expect(errors.map((e) => e.name)).toEqual([
      'TimeoutError',
      'AbortError',
      'PoolStoppedError',
      'QueueFullError',
      'CircuitOpenError',
    ]);
    for (const error of errors) expect(error).toBeInstanceOf(S3IngestError);
  });
});
