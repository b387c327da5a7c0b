import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SingleFlight } from '../../../lib/pool/dedup.js';
import { TaskAbortedError } from '../../../lib/pool/errors.js';
import { deferred, stateOf } from './helpers.js';

const fn = async () => 1;

describe('SingleFlight (lib/pool/dedup.ts)', () => {
  it('keys a call by its dedupKey, else by keyFn, else not at all', () => {
    const plain = new SingleFlight();
    expect(plain.keyOf(fn, { dedupKey: 'k' })).toBe('k');
    expect(plain.keyOf(fn, { id: 'x' })).toBeUndefined();
    const derived = new SingleFlight({
      keyFn: ({ options }) => (options.id ? `id:${options.id}` : undefined),
    });
    expect(derived.keyOf(fn, { id: 'x' })).toBe('id:x');
    expect(derived.keyOf(fn, { id: 'x', dedupKey: 'explicit' })).toBe('explicit');
    expect(derived.keyOf(fn, {})).toBeUndefined();
  });

  it('joins a pending execution only while it is younger than ttl', () => {
    const flights = new SingleFlight({ ttl: 100 });
    const shared = Promise.resolve('v');
    expect(flights.join('k', 0, undefined)).toBeUndefined();
    flights.lead('k', shared, 1_000);
    expect(flights.join('k', 1_099, undefined)).toBe(shared);
    expect(flights.join('k', 1_100, undefined)).toBeUndefined();
  });

  it('settle forgets a key only for the execution that leads it', () => {
    const flights = new SingleFlight({ ttl: 10 });
    const expired = Promise.resolve('old');
    const fresh = Promise.resolve('new');
    flights.lead('k', expired, 0);
    flights.lead('k', fresh, 50); // the old one outlived ttl: a new leader took the key
    flights.settle('k', expired);
    expect(flights.join('k', 55, undefined)).toBe(fresh);
    flights.settle('k', fresh);
    expect(flights.size).toBe(0);
    expect(flights.join('k', 55, undefined)).toBeUndefined();
  });

  it('a follower with a signal leaves alone on abort; the execution and other followers go on', async () => {
    const flights = new SingleFlight();
    const gate = deferred<string>();
    flights.lead('k', gate.promise, 0);
    const controller = new AbortController();
    const leaving = flights.join('k', 1, controller.signal)!;
    const staying = flights.join('k', 1, new AbortController().signal)!;
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(leaving).rejects.toBeInstanceOf(TaskAbortedError);
    await expect(leaving).rejects.toMatchObject({ cause: reason });
    expect(await stateOf(staying)).toBe('pending');
    gate.resolve('done');
    expect(await staying).toBe('done');
  });

  it('followers sharing a signal add one listener to it, and none is left once the execution settles', async () => {
    const flights = new SingleFlight();
    const gate = deferred<string>();
    flights.lead('k', gate.promise, 0);
    const signal = new AbortController().signal;
    const followers = Array.from({ length: 1_000 }, () => flights.join('k', 1, signal)!);
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    gate.resolve('v');
    expect(new Set(await Promise.all(followers))).toEqual(new Set(['v']));
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });
});
