import { describe, expect, it } from 'vitest';
import {
  MAX_SAMPLES_PER_INVOCATION,
  SampleReservoir,
} from '../../../../../lib/ingest/handler/settle/sample-reservoir.js';

describe('SampleReservoir', () => {
  it('keeps every observation up to its capacity, then a fixed-size sample', () => {
    const r = new SampleReservoir(3);
    for (const v of [1, 2, 3]) r.add(v);
    expect(r.values()).toEqual([1, 2, 3]);
    for (let v = 4; v <= 1000; v++) r.add(v);
    expect(r.values()).toHaveLength(3);
    expect(r.seen).toBe(1000);
  });

  it('samples uniformly: later observations replace kept ones with probability capacity/seen', () => {
    // random() = 0.5: the 4th observation lands in slot floor(0.5 * 4) = 2 (< 3, kept); the 8th in slot 4 (dropped).
    const r = new SampleReservoir(3, () => 0.5);
    for (let v = 1; v <= 4; v++) r.add(v);
    expect(r.values()).toEqual([1, 2, 4]);
    for (let v = 5; v <= 8; v++) r.add(v);
    expect(r.values()).toEqual([1, 2, 5]);
  });

  it("stays below Powertools' 100-value flush by default", () => {
    expect(MAX_SAMPLES_PER_INVOCATION).toBeLessThan(100);
  });
});
