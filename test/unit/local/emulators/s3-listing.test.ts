import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StoredS3Object } from '../../../../lib/local/emulators/fauxqs-stores.js';
import {
  compareKeys,
  continuationTokenAfter,
  keyOfContinuationToken,
  listPage,
} from '../../../../lib/local/emulators/s3-listing.js';

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function objectsOf(keys: Iterable<string>): Map<string, StoredS3Object> {
  return new Map(
    [...keys].map((key) => [key, { key, etag: '"e"', contentLength: 1, lastModified: new Date(0) }]),
  );
}

/** Pages through `listPage` as a client does, from the end of each page. */
function listAll(objects: Map<string, StoredS3Object>, prefix: string, maxKeys: number, delimiter?: string) {
  const seen: string[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = listPage(objects, {
      prefix,
      maxKeys,
      ...(delimiter ? { delimiter } : {}),
      ...(after ? { after } : {}),
    });
    seen.push(...page.objects.map((o) => o.key), ...page.commonPrefixes);
    if (!page.isTruncated) return seen;
    after = page.last;
  }
  throw new Error('listing did not end');
}

describe('embedded S3 listing', () => {
  it('compareKeys is UTF-8 byte order, surrogate pairs and case included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(Math.sign(compareKeys(a, b))).toBe(Math.sign(byteOrder(a, b)));
      }),
    );
    expect(compareKeys('id=B', 'id=_')).toBeLessThan(0);
    expect(compareKeys('\u{1F600}', '\uFFFD')).toBeGreaterThan(0);
  });

  it('paging returns every key under the prefix exactly once, in byte order, for any page size', () => {
    const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,6}$/);
    fc.assert(
      fc.property(fc.uniqueArray(id, { maxLength: 40 }), fc.integer({ min: 1, max: 7 }), (ids, maxKeys) => {
        const keys = ids.map((i) => `t=a/r=o/id=${i}.json`);
        const objects = objectsOf([...keys, 't=a/r=other/id=x.json', 't=b/r=o/id=y.json']);
        expect(listAll(objects, 't=a/r=o/', maxKeys)).toEqual([...keys].sort(byteOrder));
      }),
    );
  });

  it('with a delimiter, each common prefix is listed once across pages, in order with the keys', () => {
    const objects = objectsOf(['p/a/1', 'p/a/2', 'p/a/3', 'p/b', 'p/c/1', 'p/c/2', 'p/d']);
    for (const maxKeys of [1, 2, 3, 10]) {
      expect(listAll(objects, 'p/', maxKeys, '/').sort(byteOrder)).toEqual(['p/a/', 'p/b', 'p/c/', 'p/d']);
    }
    const first = listPage(objects, { prefix: 'p/', delimiter: '/', maxKeys: 1 });
    expect(first).toMatchObject({ objects: [], commonPrefixes: ['p/a/'], isTruncated: true, last: 'p/a/' });
  });

  it('a page that holds the last key is not truncated; max-keys 0 lists nothing and is not truncated', () => {
    const objects = objectsOf(['k1', 'k2']);
    expect(listPage(objects, { prefix: '', maxKeys: 2 })).toMatchObject({ isTruncated: false, last: 'k2' });
    expect(listPage(objects, { prefix: '', maxKeys: 0 })).toMatchObject({ objects: [], isTruncated: false });
  });

  it('continuation tokens round-trip any key; a token the listing did not issue reads as none', () => {
    for (const key of ['', 'a', 't=x/r=y/id=1.json', 'ü/😀', 'k:'])
      expect(keyOfContinuationToken(continuationTokenAfter(key))).toBe(key);
    for (const token of ['garbage', 'bGlzdC9j', '', `${continuationTokenAfter('a')}=`, '!!!!'])
      expect(keyOfContinuationToken(token), token).toBeUndefined();
  });
});
