import { Hash } from '@smithy/core/serde';
import { describe, expect, it } from 'vitest';
import { KeyCachingSha256 } from '../../../lib/db/sha256-key-cache.js';

const sdkSha256 = Hash.bind(null, 'sha256');
const hex = async (hash: { digest(): Promise<Uint8Array> }) =>
  Buffer.from(await hash.digest()).toString('hex');

type Source = string | ArrayBuffer | ArrayBufferView;

async function both(secret: Source | undefined, ...chunks: Source[]): Promise<[string, string]> {
  const ours = new KeyCachingSha256(secret);
  const sdk = new sdkSha256(secret);
  for (const chunk of chunks) {
    ours.update(chunk);
    sdk.update(chunk);
  }
  return [await hex(ours), await hex(sdk)];
}

describe('KeyCachingSha256 (the S3 client sha256)', () => {
  const backing = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const inputs: Source[] = [
    '',
    'héllo wörld',
    Buffer.from('bytes'),
    new Uint8Array([1, 2, 3]).buffer,
    backing.subarray(3, 7),
  ];

  it('hashes and HMACs exactly like the SDK hash for strings, buffers, array buffers and offset views', async () => {
    for (const secret of [
      undefined,
      '',
      'AWS4secret',
      Buffer.from('k'),
      backing.subarray(2, 9),
      new Uint8Array(32).fill(9).buffer,
    ]) {
      for (const input of inputs) {
        const [ours, sdk] = await both(secret, input);
        expect(ours, `secret ${String(secret)}, input ${String(input)}`).toBe(sdk);
      }
      const [ours, sdk] = await both(secret, 'a', Buffer.from('b'), backing.subarray(1, 2));
      expect(ours).toBe(sdk);
    }
  });

  it('keys by content, not identity: a key buffer changed in place gives the new HMAC', async () => {
    const key = new Uint8Array(32).fill(1);
    const [first] = await both(key, 'data');
    key.fill(2);
    const [ours, sdk] = await both(key, 'data');
    expect(ours).toBe(sdk);
    expect(ours).not.toBe(first);
  });

  it('reset starts over with the same key', async () => {
    const ours = new KeyCachingSha256('key');
    ours.update('ignored');
    ours.reset();
    ours.update('data');
    const [, sdk] = await both('key', 'data');
    expect(await hex(ours)).toBe(sdk);
  });

  it('stays correct past its key cache bound', async () => {
    for (let i = 0; i < 200; i++) {
      const [ours, sdk] = await both(`secret-${i}`, 'x');
      expect(ours).toBe(sdk);
    }
    const [ours, sdk] = await both('secret-3', 'x');
    expect(ours).toBe(sdk);
  });
});
