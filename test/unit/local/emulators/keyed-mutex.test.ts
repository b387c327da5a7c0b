import { describe, expect, it } from 'vitest';
import { KeyedMutex } from '../../../../lib/local/emulators/keyed-mutex.js';

/** Resolves once every callback queued so far (promise reactions included) has run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedMutex', () => {
  it('one holder per key: the second waits until the first frees it, then the key is idle again', async () => {
    const mutex = new KeyedMutex();
    const free = await mutex.lock(['a']);
    let second: (() => void) | undefined;
    void mutex.lock(['a']).then((f) => {
      second = f;
    });
    await settle();
    expect(second).toBeUndefined();
    free();
    await settle();
    expect(second).toBeTypeOf('function');
    second?.();
    await settle();
    expect(mutex.busyKeys).toBe(0);
  });

  it('different keys do not wait for each other', async () => {
    const mutex = new KeyedMutex();
    const a = await mutex.lock(['a']);
    const b = await mutex.lock(['b']);
    expect(mutex.busyKeys).toBe(2);
    a();
    b();
  });

  it('holders of several keys, asked in opposite orders, never deadlock; each key serves them in the order they asked', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const run = async (name: string, keys: string[]) => {
      const free = await mutex.lock(keys);
      order.push(name);
      await settle();
      free();
    };
    await Promise.all([run('xy', ['x', 'y']), run('yx', ['y', 'x']), run('y', ['y']), run('x', ['x'])]);
    expect(order.slice(0, 2)).toEqual(['xy', 'yx']);
    expect(order.slice(2).sort()).toEqual(['x', 'y']);
    await settle();
    expect(mutex.busyKeys).toBe(0);
  });

  it('freeing twice frees once: a later holder keeps the key', async () => {
    const mutex = new KeyedMutex();
    const first = await mutex.lock(['k']);
    let thirdHeld = false;
    const second = mutex.lock(['k']);
    void mutex.lock(['k']).then(() => {
      thirdHeld = true;
    });
    first();
    first();
    const freeSecond = await second;
    await settle();
    expect(thirdHeld).toBe(false);
    freeSecond();
    await settle();
    expect(thirdHeld).toBe(true);
  });
});
