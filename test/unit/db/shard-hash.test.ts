import { describe, expect, it } from 'vitest';
import { InvalidShardCountError } from '../../../lib/db/errors.js';
import { assertShardCount, MAX_SHARDS, shardLabel, shardOf } from '../../../lib/db/shard-hash.js';

// Test vectors computed outside Node (Python's hashlib): `int.from_bytes(sha256(id.encode()).digest()[:4],
// 'big') % n`. A reader in any language checks its implementation against this table.
const VECTORS: ReadonlyArray<{ id: string; first4: string; shards: Record<number, number> }> = [
  { id: 'o-1', first4: '5cbdcb74', shards: { 2: 0, 4: 0, 16: 4, 1000: 260, 4096: 2932 } },
  { id: 'o-2', first4: '2b6bf4c0', shards: { 2: 0, 4: 0, 16: 0, 1000: 296, 4096: 1216 } },
  { id: 'a', first4: 'ca978112', shards: { 2: 0, 4: 2, 16: 2, 1000: 610, 4096: 274 } },
  { id: 'acme:order:42', first4: '921caa19', shards: { 2: 1, 4: 1, 16: 9, 1000: 89, 4096: 2585 } },
  { id: 'Z9.-_:', first4: '535de8d1', shards: { 2: 1, 4: 1, 16: 1, 1000: 377, 4096: 2257 } },
  { id: 'user_000123', first4: 'bc03d5bc', shards: { 2: 0, 4: 0, 16: 12, 1000: 932, 4096: 1468 } },
  { id: 'x'.repeat(128), first4: '24da1b81', shards: { 2: 1, 4: 1, 16: 1, 1000: 665, 4096: 2945 } },
];

describe('shardOf: first 4 bytes of SHA-256 of the UTF-8 id, big-endian, mod N', () => {
  it.each(VECTORS)('matches the independent vectors for $id', ({ id, first4, shards }) => {
    const value = Number.parseInt(first4, 16);
    for (const [n, shard] of Object.entries(shards)) {
      expect(value % Number(n)).toBe(shard);
      expect(shardOf(id, Number(n))).toBe(shard);
    }
    expect(shardOf(id, 1)).toBe(0);
  });

  it('spreads sequential ids evenly: 40,000 ids over 16 shards within 5% of the mean each', () => {
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 40_000; i++) counts[shardOf(`order-${i}`, 16)]! += 1;
    for (const count of counts) expect(Math.abs(count - 2_500)).toBeLessThan(125);
  });

  it('labels shards with 4 zero-padded digits, so shard prefixes sort in shard order', () => {
    expect(shardLabel(0)).toBe('0000');
    expect(shardLabel(7)).toBe('0007');
    expect(shardLabel(MAX_SHARDS - 1)).toBe('4095');
    const labels = Array.from({ length: MAX_SHARDS }, (_, i) => shardLabel(i));
    expect([...labels].sort()).toEqual(labels);
  });
});

describe('assertShardCount', () => {
  it.each([1, 4, MAX_SHARDS])('accepts %s', (n) => {
    expect(() => assertShardCount(n)).not.toThrow();
  });

  it.each([0, -1, 1.5, MAX_SHARDS + 1, Number.NaN, '4', undefined])(
    'refuses %s with InvalidShardCountError naming the value and the range',
    (n) => {
      let thrown: unknown;
      try {
        assertShardCount(n);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(InvalidShardCountError);
      expect(thrown).toMatchObject({
        name: 'InvalidShardCountError',
        value: n,
        message: expect.stringContaining(`1..${MAX_SHARDS}`),
      });
    },
  );
});
