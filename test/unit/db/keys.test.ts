import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidKeyError } from '../../../lib/db/errors.js';
import {
  assertId,
  assertResource,
  assertTenant,
  idFromKey,
  normalizePrefix,
  recordKey,
  recordKeyUnder,
  resourcePrefix,
  shardPrefix,
  tenantPrefix,
} from '../../../lib/db/keys.js';

function keyError(fn: () => unknown): InvalidKeyError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidKeyError);
    return err as InvalidKeyError;
  }
  throw new Error('expected InvalidKeyError');
}

describe('key layout', () => {
  it('builds keys as <prefix>t=<tenant>/r=<resource>/id=<id>.json', () => {
    expect(recordKey('acme', 'orders', 'o-1')).toBe('t=acme/r=orders/id=o-1.json');
    expect(recordKey('acme', 'orders', 'o-1', '/env=prod/ingest/')).toBe(
      'env=prod/ingest/t=acme/r=orders/id=o-1.json',
    );
    expect(resourcePrefix('acme', 'orders', 'p')).toBe('p/t=acme/r=orders/');
    expect(tenantPrefix('acme')).toBe('t=acme/');
  });

  it('builds shard prefixes as <prefix>t=<tenant>/r=<resource>/s=<4 digits>/ and refuses shards out of range', () => {
    expect(shardPrefix('acme', 'orders', 7, 'p')).toBe('p/t=acme/r=orders/s=0007/');
    expect(recordKeyUnder(shardPrefix('acme', 'orders', 4095), 'o-1')).toBe(
      't=acme/r=orders/s=4095/id=o-1.json',
    );
    for (const shard of [-1, 4096, 1.5, Number.NaN]) {
      expect(keyError(() => shardPrefix('acme', 'orders', shard))).toMatchObject({
        part: 'shard',
        value: shard,
      });
    }
    expect(keyError(() => recordKeyUnder('t=acme/r=orders/s=0001/', '../x')).part).toBe('id');
  });

  it.each([
    ['../t=evil/x'],
    ['%2e%2e'],
    ['a/b'],
    ['a..b'],
    ['.hidden'],
    [''],
    ['x'.repeat(129)],
    ['o\u2024\u2024x'], // one-dot leader look-alikes
    ['о-1'], // Cyrillic o
    ['a\u2215b'], // division slash
    ['a\\b'],
    ['a b'],
    ['a\0b'],
  ])('rejects adversarial id %j naming the part', (id) => {
    const err = keyError(() => recordKey('acme', 'orders', id));
    expect(err.part).toBe('id');
    expect(err.name).toBe('InvalidKeyError');
  });

  it.each([['Acme'], ['acme/x'], ['t=evil'], ['-acme'], [''], ['a'.repeat(64)], ['ac me'], ['аcme']])(
    'rejects tenant %j',
    (tenant) => {
      expect(keyError(() => recordKey(tenant, 'orders', 'x')).part).toBe('tenant');
    },
  );

  it('rejects bad resources and prefixes with the part named', () => {
    expect(keyError(() => resourcePrefix('acme', 'Orders')).part).toBe('resource');
    expect(keyError(() => resourcePrefix('acme', '../x')).part).toBe('resource');
    expect(keyError(() => normalizePrefix('a/../b')).part).toBe('prefix');
    expect(keyError(() => normalizePrefix('a//b')).part).toBe('prefix');
    expect(keyError(() => normalizePrefix('t=evil')).part).toBe('prefix');
    expect(keyError(() => assertTenant(42)).part).toBe('tenant');
    expect(keyError(() => assertResource(null)).part).toBe('resource');
    expect(keyError(() => assertId(undefined)).part).toBe('id');
  });

  it('never yields a key outside <prefix>t=<tenant>/ for any input (property)', () => {
    const anyString = fc.oneof(
      fc.string({ maxLength: 140 }),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.constantFrom('..', '../', '/', 't=evil', '%2e%2e', 'a/../../b', 'id=x.json', '.'),
      fc.stringMatching(/^[A-Za-z0-9_.:/=-]{1,40}$/),
    );
    fc.assert(
      fc.property(anyString, anyString, anyString, (tenant, resource, id) => {
        let key: string;
        try {
          key = recordKey(tenant, resource, id, 'data');
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidKeyError);
          return;
        }
        const base = `data/t=${tenant}/r=${resource}/`;
        expect(key.startsWith(base)).toBe(true);
        expect(key.split('/')).toHaveLength(4);
        // Traversal needs a whole `.` or `..` segment; `id=a..json` (an id ending in `.`) is one safe segment.
        expect(key.split('/').some((segment) => segment === '.' || segment === '..')).toBe(false);
        expect(key).not.toMatch(/\/\/|\\/);
        expect(idFromKey(base, key)).toBe(id);
      }),
      { numRuns: 3000 },
    );
  });

  it('idFromKey skips foreign objects', () => {
    const base = resourcePrefix('acme', 'orders');
    expect(idFromKey(base, `${base}id=a.json`)).toBe('a');
    expect(idFromKey(base, `${base}other.json`)).toBeUndefined();
    expect(idFromKey(base, `${base}id=a..b.json`)).toBeUndefined();
    expect(idFromKey(base, `${base}id=a.txt`)).toBeUndefined();
    expect(idFromKey(base, 't=other/r=orders/id=a.json')).toBeUndefined();
  });
});
