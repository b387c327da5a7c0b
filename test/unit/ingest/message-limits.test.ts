// The scanners of lib/ingest/message/limits.ts, directly: the depth scanner's decrement on closing brackets,
// strings (with escaped quotes) skipped, array element 0 visited, paths reported, large integer literals
// found outside strings only. Issue 14's mutation testing found these unasserted.
import { describe, expect, it } from 'vitest';
import { firstUnsafeIntegerLiteral, nestsDeeperThan, scanJson } from '../../../lib/ingest/message/limits.js';
import { parseIngestMessage } from '../../../lib/ingest/message/parse.js';

describe('nestsDeeperThan', () => {
  it('counts nesting, not brackets: closing ones go back up a level', () => {
    expect(nestsDeeperThan('[[]]', 2)).toBe(false);
    expect(nestsDeeperThan('[[[]]]', 2)).toBe(true);
    // 50 siblings at level 2: never deeper than 2.
    const siblings = `{${Array.from({ length: 50 }, (_, i) => `"k${i}":{}`).join(',')}}`;
    expect(nestsDeeperThan(siblings, 2)).toBe(false);
    expect(nestsDeeperThan(`[${'[],'.repeat(40)}[]]`, 2)).toBe(false);
    expect(nestsDeeperThan('[{}]', 1)).toBe(true);
    expect(nestsDeeperThan('{[]}', 1)).toBe(true);
  });

  it('is exact at the limit', () => {
    expect(nestsDeeperThan('[[[]]]', 3)).toBe(false);
    expect(nestsDeeperThan('{}', 0)).toBe(true);
    expect(nestsDeeperThan('', 0)).toBe(false);
  });

  it('skips brackets inside strings, escaped quotes and backslashes included', () => {
    expect(nestsDeeperThan(`["${'['.repeat(10)}"]`, 1)).toBe(false);
    // The string `\"[[[[` holds an escaped quote: the brackets after it are still inside the string.
    expect(nestsDeeperThan(String.raw`["\"[[[[[[", "x"]`, 1)).toBe(false);
    // An escaped backslash ends right before the closing quote: the brackets after the string count.
    expect(nestsDeeperThan(String.raw`["\\", [[]]]`, 2)).toBe(true);
    // Closing brackets inside a string do not lower the level either.
    expect(nestsDeeperThan(`[["]]]]"[]]]`, 2)).toBe(true);
    // An unterminated string swallows the rest.
    expect(nestsDeeperThan('["[[[[', 1)).toBe(false);
  });
});

describe('scanJson', () => {
  it('reports nothing for an ordinary document', () => {
    expect(scanJson({ a: [1, 'x', null, { b: true }], c: 2.5 })).toEqual({
      nonFinitePath: undefined,
      largeIntegerPaths: undefined,
    });
  });

  it('finds a refused key in array element 0, with its path', () => {
    const doc = JSON.parse('{"data":{"list":[{"__proto__":1},{}]}}');
    expect(scanJson(doc).forbiddenKeyPath).toBe('data.list.0.__proto__');
    expect(scanJson({ a: [{ constructor: 1 }] }).forbiddenKeyPath).toBe('a.0.constructor');
    expect(scanJson([{ prototype: 1 }]).forbiddenKeyPath).toBe('0.prototype');
  });

  it('finds non-finite and large integer numbers, in array element 0 too, with their first path', () => {
    expect(scanJson({ a: [Number.POSITIVE_INFINITY, 1] }).nonFinitePath).toBe('a.0');
    expect(scanJson({ a: { b: 1 }, c: [1, Number.NaN] }).nonFinitePath).toBe('c.1');
    const big = 2 ** 60;
    const scan = scanJson({ x: [big], y: { z: big }, w: -big, s: Number.MAX_SAFE_INTEGER, f: 1e300 + 0.5 });
    expect(scan.largeIntegerPaths).toEqual(
      new Map([
        [big, 'x.0'],
        [-big, 'w'],
        [1e300, 'f'],
      ]),
    );
    expect(scan.nonFinitePath).toBeUndefined();
  });

  it('keeps the first non-finite path and still collects large integers after it', () => {
    const scan = scanJson({ a: Number.NEGATIVE_INFINITY, b: Number.POSITIVE_INFINITY, c: 2 ** 60 });
    expect(scan.nonFinitePath).toBe('a');
    expect(scan.largeIntegerPaths).toEqual(new Map([[2 ** 60, 'c']]));
  });

  it('stops at the first refused key, keeping what it found before it', () => {
    const scan = scanJson(JSON.parse('{"a":1e400,"b":{"__proto__":{"c":1e400}}}'));
    expect(scan).toEqual({
      forbiddenKeyPath: 'b.__proto__',
      nonFinitePath: 'a',
      largeIntegerPaths: undefined,
    });
  });
});

describe('firstUnsafeIntegerLiteral', () => {
  it('returns the first integer literal beyond ±(2^53-1), negative ones too', () => {
    expect(firstUnsafeIntegerLiteral('{"a":1,"b":9007199254740993}')).toBe('9007199254740993');
    expect(firstUnsafeIntegerLiteral('[-9007199254740993]')).toBe('-9007199254740993');
    expect(firstUnsafeIntegerLiteral('[9007199254740991,-9007199254740991]')).toBeUndefined();
    expect(firstUnsafeIntegerLiteral('[1,22,9007199254740992]')).toBe('9007199254740992');
  });

  it('leaves floats alone: fractions and exponents are rounded by design', () => {
    expect(
      firstUnsafeIntegerLiteral('[90071992547409930.5, 1e300, 9007199254740993e0, 1E+300]'),
    ).toBeUndefined();
    expect(firstUnsafeIntegerLiteral('[1.5, 9007199254740993]')).toBe('9007199254740993');
    // The digits of a fraction or an exponent belong to the float: not a literal of their own.
    expect(firstUnsafeIntegerLiteral('[2.9007199254740993, 1e9007199254740993]')).toBeUndefined();
  });

  it('ignores digits inside strings, after escaped quotes too', () => {
    expect(firstUnsafeIntegerLiteral('{"9007199254740993":"9007199254740993"}')).toBeUndefined();
    expect(firstUnsafeIntegerLiteral(String.raw`{"a":"\"9007199254740993"}`)).toBeUndefined();
    expect(firstUnsafeIntegerLiteral(String.raw`{"a":"\\","b":9007199254740993}`)).toBe('9007199254740993');
  });
});

describe('parse uses the scanners', () => {
  const meta = { messageId: 'm-1' };
  const envelope = (data: string) =>
    `{"v":1,"tenant":"acme","resource":"orders","op":"upsert","id":"o-1","data":${data}}`;

  it('refuses a large integer in data with its path, also in array element 0', () => {
    expect(() => parseIngestMessage(envelope('{"a":[9007199254740993]}'), meta)).toThrow(
      /data\.a\.0: integer 9007199254740993/,
    );
  });

  it('accepts data 32 levels deep with many siblings, refuses 33', () => {
    const nested = (levels: number) =>
      `${'{"a":'.repeat(levels - 1)}{"b":[],"c":{}}${'}'.repeat(levels - 1)}`;
    // The innermost object holds an array and an object one level deeper: levels + 1 in all.
    expect(() => parseIngestMessage(envelope(nested(31)), meta)).not.toThrow();
    expect(() => parseIngestMessage(envelope(nested(32)), meta)).toThrow(/nested more than 33 levels/);
  });
});
