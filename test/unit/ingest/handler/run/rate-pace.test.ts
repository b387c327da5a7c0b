import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RatePace } from '../../../../../lib/ingest/handler/run/rate-pace.js';
import type { PoolEvents } from '../../../../../lib/pool/events.js';

const slowDown = Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });

/** A pool's refusal events and its start interval, on a clock the test moves. */
function harness(granted: number, ceiling = 100) {
  const emitter = new EventEmitter();
  const intervals: number[] = [];
  const clock = { now: 1_000, writes: 0 };
  const target = { setStartInterval: (ms: number) => intervals.push(ms) };
  const events = {
    on: (event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void) =>
      emitter.on(event, listener),
    off: (event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void) =>
      emitter.off(event, listener),
  };
  const pace = new RatePace(
    target,
    events,
    granted,
    ceiling,
    () => clock.writes,
    () => clock.now,
  );
  const refuse = (durationMs = 10, error: unknown = slowDown) =>
    emitter.emit('pool:taskError', { id: 'w', attempt: 1, error, willRetry: true, durationMs });
  return { pace, intervals, clock, refuse, emitter };
}

describe('RatePace', () => {
  it('paces the pool at the granted rate from the start', () => {
    const { intervals, pace } = harness(40);
    expect(intervals).toEqual([25]);
    expect(pace.rate).toBe(40);
  });

  it('holds its rate through one stray SlowDown', () => {
    const { pace, intervals, clock, refuse } = harness(40);
    clock.writes = 20;
    refuse();
    expect(pace.rate).toBe(40);
    expect(intervals).toEqual([25]);
    expect(pace.throttled).toBe(1);
  });

  it('cuts in proportion to the share refused in the round, once the round is overloaded', () => {
    const { pace, intervals, clock, refuse } = harness(40);
    clock.writes = 10;
    refuse();
    refuse();
    // 2 refused of 10 sent: 20 % refused, so 80 % of the rate.
    expect(pace.rate).toBeCloseTo(32, 10);
    expect(intervals.at(-1)).toBeCloseTo(1000 / 32, 10);
  });

  it('never cuts below half of its rate in one round', () => {
    const { pace, clock, refuse } = harness(40);
    clock.writes = 2;
    refuse();
    refuse();
    expect(pace.rate).toBe(20);
  });

  it('does not count again a refusal of a write started before the last cut', () => {
    const { pace, clock, refuse } = harness(40);
    clock.writes = 10;
    refuse();
    refuse();
    expect(pace.rate).toBeCloseTo(32, 10);
    clock.now += 5;
    // Started 10 ms ago, before the cut 5 ms ago: its answer was on its way when the round cut.
    refuse(10);
    refuse(10);
    expect(pace.rate).toBeCloseTo(32, 10);
    expect(pace.throttled).toBe(4);
    // Started after the cut: a new round (2 refused of the 2 sent since: at most half).
    clock.writes = 12;
    refuse(1);
    refuse(1);
    expect(pace.rate).toBeCloseTo(16, 10);
  });

  it('ignores errors that are not throttling', () => {
    const { pace, clock, refuse } = harness(40);
    clock.writes = 4;
    refuse(1, new Error('socket hang up'));
    refuse(1, new Error('socket hang up'));
    refuse(1, new Error('socket hang up'));
    expect(pace.rate).toBe(40);
    expect(pace.throttled).toBe(0);
  });

  it('never raises a rate granted below the budget floor', () => {
    const { pace, clock, refuse } = harness(1, 100);
    clock.writes = 100;
    refuse();
    refuse();
    refuse();
    expect(pace.rate).toBeLessThanOrEqual(1);
  });

  it('stops listening on stop', () => {
    const { pace, emitter } = harness(40);
    expect(emitter.listenerCount('pool:taskError')).toBe(1);
    pace.stop();
    expect(emitter.listenerCount('pool:taskError')).toBe(0);
  });
});
