import { describe, expect, it } from 'vitest';
import { ConnectionStringError, openDatabase, parseConnectionString } from '../../../lib/db/index.js';

describe('parseConnectionString', () => {
  it('parses the three schemes', () => {
    expect(parseConnectionString('s3://my-bucket/a/b')).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: 'a/b/',
    });
    expect(parseConnectionString('s3://my-bucket?region=eu-west-1')).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: '',
      region: 'eu-west-1',
    });
    expect(parseConnectionString('http://AK%2Fx:se%40cret@127.0.0.1:4566/bucket1/env=dev')).toEqual({
      kind: 's3',
      bucket: 'bucket1',
      prefix: 'env=dev/',
      endpoint: 'http://127.0.0.1:4566',
      credentials: { accessKeyId: 'AK/x', secretAccessKey: 'se@cret' },
    });
    expect(parseConnectionString('memory://bucket/prefix/')).toEqual({
      kind: 'memory',
      bucket: 'bucket',
      prefix: 'prefix/',
    });
  });

  it.each([
    [''],
    ['bucket/prefix'],
    ['ftp://host/bucket'],
    ['s3://Bad_Bucket/x'],
    ['memory://b/x'],
    ['memory://bucket/../x'],
    ['memory://bucket/t=evil'],
    ['http://key:secret@localhost:1/'],
  ])('rejects %j with ConnectionStringError and no secret in the message', (cs) => {
    let caught: unknown;
    try {
      parseConnectionString(cs);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConnectionStringError);
    expect((caught as Error).message).not.toContain('secret');
  });

  it('behaviour applies to memory:// only', () => {
    const clock = { now: () => 0, sleep: async () => {} };
    const behaviour = { clock, decide: () => ({ outcome: 'ok' as const, latencyMs: 0 }) };
    expect(() => openDatabase('s3://bucket-x', { behaviour })).toThrow(ConnectionStringError);
  });
});
