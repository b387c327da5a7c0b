// What `createS3Client` trims from the SDK (checksums WHEN_REQUIRED, `UNUSED_PER_CALL_MIDDLEWARES`) must not
// change what S3ObjectStore sends or how S3's errors reach the product. Each test drives the real client
// against an HTTP server that records requests and answers like S3.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PreconditionFailedError } from '../../../lib/db/object-store.js';
import { createS3Client } from '../../../lib/db/s3-client.js';
import {
  dropUnusedPerCallMiddlewares,
  reuseRequestSigner,
  UNUSED_PER_CALL_MIDDLEWARES,
} from '../../../lib/db/s3-client-trims.js';
import { S3ObjectStore } from '../../../lib/db/s3-object-store.js';
import { httpStatusOf, isThrottling, isTransient } from '../../../lib/errors/classify.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** The next answer, by key: [status, S3 error code] (XML error body) or 'ok'. */
const answers = new Map<string, [number, string]>();
const seen: Seen[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    const key = (req.url ?? '').split('?')[0]!.split('/').pop()!;
    const answer = answers.get(key);
    if (answer !== undefined) {
      const [status, code] = answer;
      const xml = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>m</Message><RequestId>r</RequestId></Error>`;
      res.writeHead(status, {
        // From this process's clock (faked where a test freezes it), not Node's own cached real one: the SDK
        // sets its clock offset from every answer's Date.
        Date: new Date().toUTCString(),
        'Content-Type': 'application/xml',
        'x-amz-request-id': 'r',
        'Content-Length': Buffer.byteLength(xml),
      });
      res.end(req.method === 'HEAD' ? undefined : xml);
      return;
    }
    const body = '{"a":1}';
    res.writeHead(200, {
      Date: new Date().toUTCString(),
      ETag: '"e1"',
      'Content-Type': 'application/json',
      'x-amz-meta-version': '3',
      'Content-Length': req.method === 'GET' ? Buffer.byteLength(body) : 0,
    });
    res.end(req.method === 'GET' ? body : undefined);
  });
});
let endpoint = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function storeAndClient() {
  const client = createS3Client({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
  });
  return { client, store: new S3ObjectStore(client, 'bucket-1') };
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('createS3Client trimmed stack', () => {
  it('has none of the removed middlewares and no retrying left (the signing middleware still runs)', () => {
    const { client } = storeAndClient();
    const stack = client.middlewareStack.identify().join('\n');
    for (const name of [
      'getUserAgentMiddleware',
      'recursionDetectionMiddleware',
      'loggerMiddleware',
      'regionRedirectMiddleware',
    ]) {
      expect(stack).not.toContain(name);
    }
    expect(UNUSED_PER_CALL_MIDDLEWARES).toContain('retryMiddleware');
    expect(stack).toContain('httpSigningMiddleware');
    client.destroy();
  });

  it('sends a signed PUT with its body hash, conditional headers, content type and metadata, and no CRC', async () => {
    const { client, store } = storeAndClient();
    seen.length = 0;
    const out = await store.put({
      key: 'k1',
      body: '{"x":1}',
      metadata: { version: '2' },
      ifNoneMatch: '*',
    });
    await store.put({ key: 'k2', body: '{}', ifMatch: '"e0"' });
    expect(out.etag).toBe('"e1"');
    const [first, second] = seen;
    expect(first!.method).toBe('PUT');
    expect(first!.url).toBe('/bucket-1/k1?x-id=PutObject');
    expect(first!.body).toBe('{"x":1}');
    expect(first!.headers['if-none-match']).toBe('*');
    expect(first!.headers['x-amz-meta-version']).toBe('2');
    expect(first!.headers['content-type']).toBe('application/json');
    expect(first!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AK\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=.*host.*, Signature=[0-9a-f]{64}$/,
    );
    // The payload stays signed: the SHA-256 of the body, not UNSIGNED-PAYLOAD.
    const { createHash } = await import('node:crypto');
    expect(first!.headers['x-amz-content-sha256']).toBe(createHash('sha256').update('{"x":1}').digest('hex'));
    expect(
      Object.keys(first!.headers).filter(
        (h) => h.startsWith('x-amz-checksum') || h === 'x-amz-sdk-checksum-algorithm',
      ),
    ).toEqual([]);
    // The removed middlewares' headers are gone: nothing else depended on them.
    expect(first!.headers['amz-sdk-invocation-id']).toBeUndefined();
    expect(second!.headers['if-match']).toBe('"e0"');
    client.destroy();
  });

  it('reads body, etag, content type and metadata back', async () => {
    const { client, store } = storeAndClient();
    const got = await store.get('k1');
    expect(got).toMatchObject({
      body: '{"a":1}',
      etag: '"e1"',
      contentType: 'application/json',
      metadata: { version: '3' },
    });
    expect(await store.head('k1')).toMatchObject({ etag: '"e1"', metadata: { version: '3' } });
    client.destroy();
  });

  it('keeps the error shapes the product relies on: SlowDown 503, 412, 404 NoSuchKey, 409', async () => {
    const { client, store } = storeAndClient();
    answers.set('slow', [503, 'SlowDown']);
    const slow = await failureOf(store.put({ key: 'slow', body: '{}' }));
    expect(slow).toMatchObject({ name: 'SlowDown', $metadata: { httpStatusCode: 503 } });
    expect(isThrottling(slow)).toBe(true);
    expect(httpStatusOf(slow)).toBe(503);

    answers.set('taken', [412, 'PreconditionFailed']);
    const taken = await failureOf(store.put({ key: 'taken', body: '{}', ifNoneMatch: '*' }));
    expect(taken).toBeInstanceOf(PreconditionFailedError);

    answers.set('gone', [404, 'NoSuchKey']);
    expect(await store.get('gone')).toBeUndefined();
    const missing = await failureOf(store.put({ key: 'gone', body: '{}', ifMatch: '"e0"' }));
    expect(missing).toBeInstanceOf(PreconditionFailedError);

    // A bucket in another region: S3's 301 reaches the caller as is (no redirect following).
    answers.set('moved', [301, 'PermanentRedirect']);
    const moved = await failureOf(store.put({ key: 'moved', body: '{}' }));
    expect(moved).toMatchObject({ name: 'PermanentRedirect', $metadata: { httpStatusCode: 301 } });

    answers.set('busy', [409, 'ConditionalRequestConflict']);
    const busy = await failureOf(store.put({ key: 'busy', body: '{}', ifMatch: '"e0"' }));
    expect(busy).toMatchObject({ name: 'ConditionalRequestConflict', $metadata: { httpStatusCode: 409 } });
    expect(isTransient(busy)).toBe(true);
    client.destroy();
  });

  it('does not retry inside the SDK: one request per failed call', async () => {
    const { client, store } = storeAndClient();
    answers.set('once', [500, 'InternalError']);
    seen.length = 0;
    const err = await failureOf(store.put({ key: 'once', body: '{}' }));
    expect(err).toMatchObject({ name: 'InternalError', $metadata: { httpStatusCode: 500 } });
    expect(seen).toHaveLength(1);
    client.destroy();
  });

  it("signs with the reused signer exactly as with the SDK's per-call one (same request, same instant)", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    // Frozen at a whole second, which the server's Date header (second resolution, from the same frozen
    // clock) then shows exactly: the offset the SDK takes from the first answer is 0, so every request of
    // the test signs at one instant however long the first one took.
    vi.setSystemTime(Math.floor(Date.now() / 1000) * 1000);
    const { client, store } = storeAndClient();
    const sdk = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
      maxAttempts: 1,
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    // The same headers on the wire, only the signer is built per call.
    dropUnusedPerCallMiddlewares(sdk);
    try {
      seen.length = 0;
      const input = { key: 'same', body: '{"s":1}', metadata: { v: '1' }, ifMatch: '"e0"' };
      await store.put(input);
      await store.put(input); // the second request signs with the reused signer
      await new S3ObjectStore(sdk, 'bucket-1').put(input);
      const [first, second, reference] = seen.map((r) => r.headers.authorization);
      expect(reference).toMatch(/^AWS4-HMAC-SHA256 /);
      expect(first).toBe(reference);
      expect(second).toBe(reference);
    } finally {
      vi.useRealTimers();
      client.destroy();
      sdk.destroy();
    }
  });

  it('builds the request signer once per client', async () => {
    const { client, store } = storeAndClient();
    await store.put({ key: 'k1', body: '{}' });
    const signer = await client.config.signer();
    await store.put({ key: 'k1', body: '{}' });
    expect(await client.config.signer()).toBe(signer);
    client.destroy();
  });

  it('does not keep a failed signer construction: the next call builds again', async () => {
    const built = { sign: async () => ({}) };
    const failure = new Error('no region');
    const build = vi.fn().mockRejectedValueOnce(failure).mockResolvedValue(built);
    const client = { config: { signer: build } } as unknown as S3Client;
    reuseRequestSigner(client);
    await expect(client.config.signer()).rejects.toBe(failure);
    expect(await client.config.signer()).toBe(built);
    expect(await client.config.signer()).toBe(built);
    expect(build).toHaveBeenCalledTimes(2);
  });
});
