import { describe, expect, it } from 'vitest';
import { peakHeld } from '../../integration/semaphore/support/timeline.js';

describe('peakHeld (the timeline check the contention tests rely on)', () => {
  it('finds overlapping holds', () => {
    expect(
      peakHeld([
        { start: 0, end: 10, permits: 2 },
        { start: 5, end: 15, permits: 3 },
        { start: 12, end: 20, permits: 1 },
      ]),
    ).toEqual({ peak: 5, at: 5 });
  });

  it('counts a release logged at the same instant as an acquire as ended first', () => {
    expect(
      peakHeld([
        { start: 0, end: 10, permits: 2 },
        { start: 10, end: 20, permits: 2 },
      ]).peak,
    ).toBe(2);
  });
});
