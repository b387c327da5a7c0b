import { describe, expect, it } from 'vitest';
import { InvalidSemaphoreOptionsError, permitsFor } from '../../../lib/semaphore/index.js';

describe('permitsFor (Little’s law)', () => {
  it('is rate x latency, scaled by safety, rounded down, at least 1', () => {
    expect(permitsFor({ ratePerSecond: 3500, latencyMs: 20 })).toBe(70);
    expect(permitsFor({ ratePerSecond: 3500, latencyMs: 20, safety: 0.8 })).toBe(56);
    expect(permitsFor({ ratePerSecond: 5500, latencyMs: 15 })).toBe(82);
    expect(permitsFor({ ratePerSecond: 10, latencyMs: 5 })).toBe(1);
  });

  it('rejects nonsense with a typed error', () => {
    expect(() => permitsFor({ ratePerSecond: 0, latencyMs: 20 })).toThrow(InvalidSemaphoreOptionsError);
    expect(() => permitsFor({ ratePerSecond: 3500, latencyMs: Number.NaN })).toThrow(
      InvalidSemaphoreOptionsError,
    );
    expect(() => permitsFor({ ratePerSecond: 3500, latencyMs: 20, safety: 1.5 })).toThrow(
      InvalidSemaphoreOptionsError,
    );
  });
});
