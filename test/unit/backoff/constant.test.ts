import { describe, expect, it } from 'vitest';
import { ConstantBackoff } from '../../../lib/backoff/index.js';

describe('ConstantBackoff', () => {
  it('waits the same every time', () => {
    const first = new ConstantBackoff(250).next();
    expect([first.duration, first.next().duration, first.next().next().duration]).toEqual([250, 250, 250]);
  });

  it('refuses a negative delay with a RangeError naming it', () => {
    expect(() => new ConstantBackoff(-1)).toThrow(
      expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('delay') }),
    );
  });
});
