import { describe, expect, it } from 'vitest';
import { ExponentialBackoff, exponentialDelay } from '../../../lib/backoff/index.js';
import { durations, playback } from './support.js';

describe('ExponentialBackoff', () => {
  it('without jitter doubles from initialDelay up to maxDelay, then holds there', () => {
    const backoff = new ExponentialBackoff({ initialDelay: 100, maxDelay: 1000, jitter: 'none' });
    expect(durations(backoff.next(), 7)).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it('with full jitter scales each ceiling by one injected draw, in order', () => {
    const backoff = new ExponentialBackoff({
      initialDelay: 100,
      maxDelay: 1000,
      random: playback(0, 0.5, 0.25, 1, 0.5),
    });
    expect(durations(backoff.next(), 5)).toEqual([0, 100, 100, 800, 500]);
  });

  it('stays within [0, min(cap, base x 2^(n-1))] for every draw', () => {
    const backoff = new ExponentialBackoff({ initialDelay: 10, maxDelay: 300 });
    for (let trial = 0; trial < 50; trial++) {
      durations(backoff.next(), 8).forEach((d, i) => {
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(Math.min(300, 10 * 2 ** i));
      });
    }
  });

  it('is immutable: a step gives the same next wait however often it is asked', () => {
    const first = new ExponentialBackoff({ initialDelay: 100, jitter: 'none' }).next();
    expect(first.next().duration).toBe(200);
    expect(first.next().duration).toBe(200);
    expect(first.duration).toBe(100);
  });

  it('defaults to 1 s doubling to 20 s with full jitter, drawn from Math.random at each wait', () => {
    const backoff = new ExponentialBackoff({ random: () => 1 });
    expect(durations(backoff.next(), 6)).toEqual([1000, 2000, 4000, 8000, 16000, 20000]);
    expect(new ExponentialBackoff({ jitter: 'none' }).next().duration).toBe(1000);
  });

  it('refuses a negative delay or an unknown jitter with a RangeError naming the option', () => {
    expect(() => new ExponentialBackoff({ initialDelay: -1 })).toThrow(
      expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('initialDelay') }),
    );
    expect(() => new ExponentialBackoff({ maxDelay: Number.NaN })).toThrow(
      expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('maxDelay') }),
    );
    const bad = { jitter: 'half' } as unknown as ConstructorParameters<typeof ExponentialBackoff>[0];
    expect(() => new ExponentialBackoff(bad)).toThrow(
      expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('jitter') }),
    );
  });
});

describe('exponentialDelay: wait n straight from a count', () => {
  it("is the chain's nth wait, counts below 1 as 1, and stops doubling after 30", () => {
    expect(exponentialDelay(1, 100, 1000, 'none')).toBe(100);
    expect(exponentialDelay(4, 100, 1000, 'none')).toBe(800);
    expect(exponentialDelay(0, 100, 1000, 'none')).toBe(100);
    expect(exponentialDelay(-3, 100, 1000, 'none')).toBe(100);
    expect(exponentialDelay(1_000, 1, Number.POSITIVE_INFINITY, 'none')).toBe(2 ** 30);
    expect(exponentialDelay(3, 10, 1000, 'full', () => 0.5)).toBe(20);
  });
});

describe('a jittered step is drawn when first read, once', () => {
  it('keeps its duration and its next step, and draws in the order the waits are read', () => {
    const random = playback(0.5, 0.25);
    const first = new ExponentialBackoff({ initialDelay: 100, random }).next();
    const second = first.next();
    expect(second.duration).toBe(100); // read first: takes the first draw (0.5 x a 200 ms ceiling)
    expect(first.duration).toBe(25); // then 0.25 x 100
    expect([first.duration, first.next(), second.duration]).toEqual([25, second, 100]);
  });
});
