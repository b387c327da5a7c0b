import { describe, expect, it } from 'vitest';
import { DecorrelatedBackoff, decorrelatedDelay } from '../../../lib/backoff/index.js';
import { durations, playback } from './support.js';

describe('DecorrelatedBackoff', () => {
  it('starts at initialDelay, then draws each wait in [base, 3 x previous], capped', () => {
    // 100; 100 + 1 x (300 - 100) = 300; 100 + 0.5 x (900 - 100) = 500; min(1000, 100 + 1 x 1400) = 1000.
    const random = playback(0.7, 1, 0.5, 1);
    const backoff = new DecorrelatedBackoff({ initialDelay: 100, maxDelay: 1000, random });
    expect(durations(backoff.next(), 4)).toEqual([100, 300, 500, 1000]);
  });

  it('never leaves [initialDelay, maxDelay] for any draw', () => {
    let step = new DecorrelatedBackoff({ initialDelay: 50, maxDelay: 2000 }).next();
    for (let i = 0; i < 200; i++) {
      expect(step.duration).toBeGreaterThanOrEqual(50);
      expect(step.duration).toBeLessThanOrEqual(2000);
      step = step.next();
    }
  });

  it('refuses a negative delay with a RangeError naming the option', () => {
    expect(() => new DecorrelatedBackoff({ maxDelay: -5 })).toThrow(
      expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('maxDelay') }),
    );
  });
});

describe('decorrelatedDelay', () => {
  it('is base with no previous wait (one draw still taken) and the cap at most', () => {
    const draws = playback(0.9, 0);
    expect(decorrelatedDelay(0, 100, 1000, draws)).toBe(100);
    expect(decorrelatedDelay(400, 100, 1000, draws)).toBe(100);
    expect(decorrelatedDelay(10_000, 100, 1000, () => 0.5)).toBe(1000);
  });
});
