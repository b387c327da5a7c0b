import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RatePace } from '../../../../../lib/ingest/handler/run/rate-pace.js';
import type { PoolEvents } from '../../../../../lib/pool/events.js';
import type { WriteRound } from '../../../../../lib/semaphore/rate-types.js';
import { MIN_ROUND_WRITES, SLOT_CATCH_UP_MS } from '../../../../../lib/semaphore/tuning.js';

const slowDown = Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });

/** A promise the test settles. */
function later<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

/**
 * A pace over a pool's refusal events and start interval, on a clock and a write count the test moves.
 * `answer(round)` is what stepping the schedule resolves (the rate to pace at); each round is kept.
 */
function harness(
  rate: number,
  answer: (round: WriteRound) => Promise<number> = async () => rate / 2,
  minRoundWrites?: number,
) {
  const emitter = new EventEmitter();
  const intervals: Array<{ ms: number; catchUpMs: number | undefined }> = [];
  const clock = { now: 1_000, writes: 0 };
  const rounds: WriteRound[] = [];
  const target = {
    setStartInterval: (ms: number, options?: { readonly catchUpMs?: number }) =>
      intervals.push({ ms, catchUpMs: options?.catchUpMs }),
  };
  const events = {
    on: (event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void) =>
      emitter.on(event, listener),
    off: (event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void) =>
      emitter.off(event, listener),
  };
  const pace = new RatePace(
    target,
    events,
    rate,
    () => clock.writes,
    (round) => {
      rounds.push(round);
      return answer(round);
    },
    () => clock.now,
    minRoundWrites,
  );
  /** A write refused now, answered `durationMs` after it started (counted in `writes` first, as the pool's count is). */
  const refuse = (durationMs = 0, error: unknown = slowDown) => {
    clock.writes += 1;
    emitter.emit('pool:taskError', { id: 'w', attempt: 1, error, willRetry: true, durationMs, paced: true });
  };
  /** A read (an unpaced task) refused now: S3's read limit is not the prefix's write rate. */
  const refuseRead = (durationMs = 0) => {
    emitter.emit('pool:taskError', {
      id: 'r',
      attempt: 1,
      error: slowDown,
      willRetry: true,
      durationMs,
      paced: false,
    });
  };
  /** `n` writes accepted. */
  const accept = (n: number) => {
    clock.writes += n;
  };
  return { pace, intervals, clock, refuse, refuseRead, accept, rounds, emitter };
}

/** Lets the step's promise chain settle. */
const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('RatePace', () => {
  it("paces the pool at the booking's rate from the start, catching up late starts on its slots", () => {
    const { intervals, pace } = harness(40);
    expect(intervals).toEqual([{ ms: 25, catchUpMs: SLOT_CATCH_UP_MS }]);
    expect(pace.rate).toBe(40);
  });

  it('a round starts at its first refusal: the writes accepted before it do not dilute it', async () => {
    const { pace, refuse, accept, rounds, intervals } = harness(40);
    accept(100);
    refuse();
    accept(4);
    refuse();
    accept(2);
    refuse();
    // 9 writes since the round's first refusal: too few to judge.
    expect(rounds).toEqual([]);
    refuse();
    // 10 writes from the first refusal (it included), 4 refused: stepped with that round alone.
    expect(MIN_ROUND_WRITES).toBe(10);
    expect(rounds).toEqual([{ accepted: 6, throttled: 4, starved: false }]);
    await turn();
    expect(pace.rate).toBe(20);
    expect(intervals.at(-1)).toEqual({ ms: 50, catchUpMs: SLOT_CATCH_UP_MS });
  });

  it('a round is judged at a refusal: refusals within fewer than MIN_ROUND_WRITES writes never step', async () => {
    const { pace, refuse, accept, rounds } = harness(40);
    for (let i = 0; i < 5; i++) refuse();
    // Five refused of five: overloaded by its share, but a share of so few writes is noise.
    accept(100);
    await turn();
    expect(rounds).toEqual([]);
    expect(pace.rate).toBe(40);
  });

  it('writes spread over 4 prefixes: a round needs MIN_ROUND_WRITES writes to each before its share is trusted', async () => {
    const { pace, refuse, accept, rounds } = harness(40, undefined, 4 * MIN_ROUND_WRITES);
    // A burst of refusals from the one prefix that ran out: 4 of the first 10 writes, a 40% share of the
    // writes to all four (one prefix's MIN_ROUND_WRITES: an unsharded holder would step by it here).
    for (let i = 0; i < 4; i++) {
      refuse();
      if (i < 3) accept(2);
    }
    expect(rounds).toEqual([]);
    // 40 writes from the first refusal, 5 refused: judged now, by its share over all of them.
    accept(29);
    refuse();
    expect(rounds).toEqual([{ accepted: 35, throttled: 5, starved: false }]);
    await turn();
    expect(pace.rate).toBe(20);
  });

  it('holds through a stray SlowDown, and through refusals under the tolerated share', async () => {
    const stray = harness(40);
    stray.accept(50);
    stray.refuse();
    stray.accept(50);
    await turn();
    expect(stray.rounds).toEqual([]);
    expect(stray.pace.rate).toBe(40);
    // Two refused in 300 writes (under 1 %): jitter at the limit, not an overload.
    const noise = harness(40);
    noise.refuse();
    noise.accept(298);
    noise.refuse();
    await turn();
    expect(noise.rounds).toEqual([]);
    expect(noise.pace.sinceCut()).toEqual({ accepted: 298, throttled: 2 });
  });

  it('steps once while its step is in flight: later refusals wait for the cut', async () => {
    const answer = later<number>();
    const { pace, refuse, accept, rounds } = harness(40, () => answer.promise);
    refuse();
    accept(18);
    refuse();
    expect(rounds).toHaveLength(1);
    accept(30);
    refuse();
    refuse();
    expect(rounds).toHaveLength(1);
    expect(pace.rate).toBe(40);
    answer.resolve(30);
    await pace.settled();
    expect(pace.rate).toBe(30);
    expect(rounds).toHaveLength(1);
  });

  it('lowers the pace to what the step resolves, and never raises it within the booking', async () => {
    const answers = [30, 35, 0, Number.NaN];
    const { pace, refuse, accept, intervals } = harness(40, async () => answers.shift()!);
    const overloadRound = async () => {
      refuse();
      accept(18);
      refuse();
      await pace.settled();
    };
    await overloadRound();
    expect(pace.rate).toBe(30);
    expect(intervals.at(-1)).toEqual({ ms: 1000 / 30, catchUpMs: SLOT_CATCH_UP_MS });
    // Higher than the pace, or no rate at all: the pace stays, and so does the pool's interval.
    for (let i = 0; i < 3; i++) await overloadRound();
    expect(pace.rate).toBe(30);
    expect(intervals).toHaveLength(2);
  });

  it('a refusal of a write started before the cut belongs to the round that cut', async () => {
    const { pace, clock, refuse, accept, rounds } = harness(40, async () => 32);
    refuse();
    accept(18);
    refuse();
    await pace.settled();
    expect(pace.rate).toBe(32);
    // The cut was at 1000; now is 1005.
    clock.now += 5;
    refuse(10); // started at 995: on its way when the round cut
    refuse(6); // started at 999
    expect(pace.sinceCut()).toEqual({ accepted: 2, throttled: 0 });
    refuse(5); // started at the cut: this round's
    expect(pace.sinceCut()).toEqual({ accepted: 2, throttled: 1 });
    // The new round starts at its own first refusal and needs its own 20 writes.
    accept(18);
    refuse(1);
    expect(rounds).toHaveLength(2);
    expect(rounds[1]).toEqual({ accepted: 18, throttled: 2, starved: false });
  });

  it('sinceCut is the whole booking before any cut, then the writes since the last cut and their refusals', async () => {
    const { pace, refuse, accept } = harness(40, async () => 20);
    accept(10);
    refuse();
    accept(5);
    expect(pace.sinceCut()).toEqual({ accepted: 15, throttled: 1 });
    accept(13);
    refuse();
    await pace.settled();
    expect(pace.rate).toBe(20);
    expect(pace.sinceCut()).toEqual({ accepted: 0, throttled: 0 });
    accept(7);
    refuse();
    expect(pace.sinceCut()).toEqual({ accepted: 7, throttled: 1 });
  });

  it('counts only throttling: other errors are neither refusals nor a round', async () => {
    const { pace, refuse, accept, rounds } = harness(40);
    for (let i = 0; i < 30; i++) refuse(1, new Error('socket hang up'));
    accept(10);
    refuse(1, Object.assign(new Error('Service Unavailable'), { $metadata: { httpStatusCode: 503 } }));
    await turn();
    expect(rounds).toEqual([]);
    expect(pace.sinceCut()).toEqual({ accepted: 40, throttled: 1 });
  });

  it("counts only writes: a read's SlowDown (an unpaced task) is neither a refusal nor a round", async () => {
    const { pace, refuseRead, accept, rounds } = harness(40);
    accept(20);
    for (let i = 0; i < 20; i++) refuseRead(1);
    await turn();
    expect(rounds).toEqual([]);
    expect(pace.sinceCut()).toEqual({ accepted: 20, throttled: 0 });
  });

  it('settled() waits for the step in flight, and is at once when there is none', async () => {
    const answer = later<number>();
    const { pace, refuse, accept } = harness(40, () => answer.promise);
    await pace.settled();
    refuse();
    accept(18);
    refuse();
    let done = false;
    const settled = pace.settled().then(() => {
      done = true;
    });
    await turn();
    expect(done).toBe(false);
    answer.resolve(25);
    await settled;
    expect(pace.rate).toBe(25);
  });

  it('stops listening on stop (idempotent): later refusals are not counted', () => {
    const { pace, emitter, refuse } = harness(40);
    expect(emitter.listenerCount('pool:taskError')).toBe(1);
    pace.stop();
    pace.stop();
    expect(emitter.listenerCount('pool:taskError')).toBe(0);
    refuse();
    expect(pace.sinceCut()).toEqual({ accepted: 1, throttled: 0 });
  });
});

describe('RatePace.restart (a new booking)', () => {
  it("paces at the new rate and, at a rate as high as the round's, keeps the round: its refusals are still reported", () => {
    const { pace, intervals, refuse, accept } = harness(50);
    accept(5);
    refuse();
    pace.restart(100);
    pace.restart(100);
    accept(2);
    expect(pace.rate).toBe(100);
    expect(intervals.slice(-2).map((i) => i.ms)).toEqual([10, 10]);
    expect(pace.sinceCut()).toEqual({ accepted: 7, throttled: 1 });
  });

  it('at a lower rate starts a new round: refusals seen before a decrease never step the schedule again', async () => {
    const { pace, intervals, clock, refuse, accept, rounds } = harness(50);
    // Refusals under the first booking, too few writes to step: then the slots end, and another holder's
    // decrease (from the same overload) left the schedule at 30 when this holder books again.
    refuse();
    refuse();
    refuse();
    accept(2);
    clock.now += 100;
    pace.restart(30);
    expect(pace.rate).toBe(30);
    expect(intervals.at(-1)).toEqual({ ms: 1000 / 30, catchUpMs: SLOT_CATCH_UP_MS });
    expect(pace.sinceCut()).toEqual({ accepted: 0, throttled: 0 });
    // A refusal of a write sent before the new booking belongs to the old round.
    refuse(150);
    accept(10);
    refuse();
    await turn();
    expect(rounds).toEqual([]);
    expect(pace.sinceCut()).toEqual({ accepted: 11, throttled: 1 });
  });

  it('judges a lower rate against the highest rate the round paced at', () => {
    const { pace, refuse, accept } = harness(50);
    refuse();
    accept(3);
    pace.restart(100);
    refuse();
    pace.restart(80);
    expect(pace.sinceCut()).toEqual({ accepted: 0, throttled: 0 });
    pace.restart(80);
    refuse();
    pace.restart(90);
    expect(pace.sinceCut()).toEqual({ accepted: 0, throttled: 1 });
  });
});
