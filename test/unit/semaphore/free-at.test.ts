// When a waiter expects enough permits free (freeAt, adaptive-dynamo-semaphore.ts): from the holders'
// announced due times, earliest first, each capped at its lease's end; unknown when a holder in the way said
// nothing; a time already past when it is late.
import { describe, expect, it } from 'vitest';
import { freeAt, type Room } from '../../../lib/semaphore/adaptive-dynamo-semaphore.js';
import type { HolderEntry } from '../../../lib/semaphore/shard-table.js';

const NOW = 100;
const seen = { capacity: 4, latencyMs: 20, decreasedAt: 0 };
const room = (index: number, unclamped: number, holders: HolderEntry[]): Room => ({
  index,
  free: Math.max(0, unclamped),
  unclamped,
  holders,
  seen,
});
const holder = (n: number, due: number | undefined, until = 100_000): HolderEntry =>
  due === undefined ? { n, until } : { n, until, due };

describe('freeAt', () => {
  it('the earliest holders first, whatever their order in the item, until enough are free', () => {
    const rooms = [room(0, 0, [holder(1, 900), holder(1, 300), holder(2, 600)])];
    expect(freeAt(rooms, 1)).toBe(300);
    expect(freeAt(rooms, 2)).toBe(600);
    expect(freeAt(rooms, 4)).toBe(900);
    expect(freeAt(rooms, 5)).toBeUndefined();
  });

  it('counts what is free already, and exactly enough is enough', () => {
    expect(freeAt([room(0, 1, [holder(1, 300)])], 2)).toBe(300);
    expect(freeAt([room(0, 0, [holder(2, 300)])], 2)).toBe(300);
  });

  it('a shard under a shrunk capacity frees nothing until its debt is paid; holders on several shards add up', () => {
    const rooms = [room(0, -1, [holder(1, 300), holder(1, 500)]), room(1, 0, [holder(1, 400)])];
    // 300 pays shard 0's debt, 400 frees one on shard 1, 500 one on shard 0.
    expect(freeAt(rooms, 1)).toBe(400);
    expect(freeAt(rooms, 2)).toBe(500);
  });

  it("a holder is due by its lease's end at the latest", () => {
    expect(freeAt([room(0, 0, [holder(1, 9_000, 400)])], 1)).toBe(400);
  });

  it('unknown when a holder in the way said nothing; a late one is due at the time it said (past: poll)', () => {
    expect(freeAt([room(0, 0, [holder(1, undefined)])], 1)).toBeUndefined();
    expect(freeAt([room(0, 0, [holder(1, NOW - 50)])], 1)).toBe(NOW - 50);
    // A late holder not enough on its own: the next one's due.
    expect(freeAt([room(0, 0, [holder(1, NOW - 50), holder(1, 300)])], 2)).toBe(300);
    expect(freeAt([room(0, 0, [holder(1, 300), holder(1, undefined)])], 2)).toBeUndefined();
    // One that is not in the way does not matter.
    expect(freeAt([room(0, 0, [holder(1, 300), holder(1, undefined)])], 1)).toBe(300);
  });
});
