// InvocationDeadline: its two signals abort with typed reasons, on the clock they were given.
import { describe, expect, it } from 'vitest';
import {
  InvocationDeadlineReachedError,
  SettleBudgetSpentError,
} from '../../../../lib/ingest/handler/errors.js';
import { InvocationDeadline } from '../../../../lib/ingest/handler/invocation-deadline.js';
import type { Clock } from '../../../../lib/ingest/index.js';

/** A clock whose timers fire only when the test moves it. */
function manualClock(start: number) {
  let now = start;
  const timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    now: () => now,
    schedule(ms, fn) {
      const timer = { at: now + ms, fn };
      timers.push(timer);
      return () => timers.splice(timers.indexOf(timer), 1);
    },
  };
  const advanceTo = (at: number) => {
    now = at;
    for (const timer of timers.filter((t) => t.at <= at)) {
      timers.splice(timers.indexOf(timer), 1);
      timer.fn();
    }
  };
  return { clock, advanceTo, pending: () => timers.length };
}

describe('InvocationDeadline', () => {
  it('aborts the write signal at the cutoff and the settle signal settleMs later, each with its own error', () => {
    const { clock, advanceTo } = manualClock(1_000);
    const deadline = new InvocationDeadline(clock, 1_000, 10_000, 2_000, 1_000);

    expect(deadline.cutoff).toBe(9_000);
    advanceTo(8_999);
    expect(deadline.reached).toBe(false);
    advanceTo(9_000);
    expect(deadline.reached).toBe(true);
    expect(deadline.signal.reason).toBeInstanceOf(InvocationDeadlineReachedError);
    expect(deadline.signal.reason).toMatchObject({
      name: 'InvocationDeadlineReachedError',
      message: 'invocation deadline margin reached',
    });
    expect(deadline.settleSignal.aborted).toBe(false);
    advanceTo(10_000);
    expect(deadline.settleSignal.reason).toBeInstanceOf(SettleBudgetSpentError);
    expect(deadline.settleSignal.reason).toMatchObject({ name: 'SettleBudgetSpentError' });
  });

  it('a cutoff already past aborts both signals at once, before any timer', () => {
    const { clock } = manualClock(1_000);
    const deadline = new InvocationDeadline(clock, 1_000, 1_500, 2_000);

    expect(deadline.signal.reason).toBeInstanceOf(InvocationDeadlineReachedError);
    expect(deadline.settleSignal.reason).toBeInstanceOf(SettleBudgetSpentError);
  });

  it('dispose cancels both timers', () => {
    const { clock, pending } = manualClock(0);
    const deadline = new InvocationDeadline(clock, 0, 10_000, 1_000, 500);
    expect(pending()).toBe(2);
    deadline.dispose();
    expect(pending()).toBe(0);
  });
});
