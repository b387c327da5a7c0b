import { createHash, createHmac, createSecretKey, type Hash, type Hmac, type KeyObject } from 'node:crypto';

// Why: SigV4 computes two HMACs per request (the signing-key cache's lookup key, over the secret access
// key, and the signature, over the cached signing key). The SDK's node hash passes those keys to
// `createHmac` as bytes, and Node then builds a key object per call: ~24 us per HMAC against ~4 us from a
// `KeyObject` (Node 24, this machine). This hash keeps the key objects, looked up by the key's content,
// so a key is never reused for different bytes.

type SourceData = string | ArrayBuffer | ArrayBufferView;

const MAX_KEYS = 64;
const keys = new Map<string, KeyObject>();

function bytesOf(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

function hmacKeyOf(secret: SourceData): KeyObject | Buffer {
  const bytes = bytesOf(secret);
  if (bytes.length === 0) return bytes; // no key object of zero length; not a key SigV4 uses
  const id = bytes.toString('base64');
  let key = keys.get(id);
  if (key === undefined) {
    // Signing keys change once a day per region and service: a small bound is plenty.
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(bytes);
    keys.set(id, key);
  }
  return key;
}

/**
 * SHA-256 (or HMAC-SHA256 with `secret`) for the SDK's `sha256` client option, equal in output to the
 * SDK's own node implementation, with HMAC keys kept as `KeyObject`s across calls.
 */
export class KeyCachingSha256 {
  readonly #secret: SourceData | undefined;
  #hash: Hash | Hmac;

  constructor(secret?: SourceData) {
    this.#secret = secret;
    this.#hash = this.#create();
  }

  update(data: SourceData, encoding?: 'utf8' | 'ascii' | 'latin1'): void {
    if (typeof data === 'string') this.#hash.update(data, encoding ?? 'utf8');
    else if (ArrayBuffer.isView(data))
      this.#hash.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    else this.#hash.update(new Uint8Array(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.#hash.digest());
  }

  reset(): void {
    this.#hash = this.#create();
  }

  #create(): Hash | Hmac {
    // An empty secret means no key, as in the SDK's implementation.
    return this.#secret ? createHmac('sha256', hmacKeyOf(this.#secret)) : createHash('sha256');
  }
}
