import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type ChaosProxy,
  classifyS3Request,
  startChaosProxy,
} from '../../../../lib/local/s3-behaviour/chaos-proxy.js';
import type { S3BehaviourOptions } from '../../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { localAwsEndpoints, localClientConfig } from '../../../support/local-aws.js';

const bucket = `it-chaos-${randomUUID().slice(0, 8)}`;
const direct = new S3Client(localClientConfig('s3'));
const proxies: ChaosProxy[] = [];
const clients: S3Client[] = [];

async function proxyWith(model: S3BehaviourOptions): Promise<ChaosProxy> {
  const proxy = await startChaosProxy({ target: localAwsEndpoints().s3, model });
  proxies.push(proxy);
  return proxy;
}

function clientFor(proxy: ChaosProxy, maxAttempts: number): S3Client {
  const client = new S3Client({ ...localClientConfig('s3'), endpoint: proxy.endpoint, maxAttempts });
  clients.push(client);
  return client;
}

async function rejection(promise: Promise<unknown>): Promise<S3ServiceException> {
  try {
    await promise;
  } catch (error) {
    return error as S3ServiceException;
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  await direct.send(new CreateBucketCommand({ Bucket: bucket }));
  await direct.send(new PutObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json', Body: '{"a":1}' }));
});
afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
});
afterAll(() => direct.destroy());

describe('chaos proxy: what the SDK sees', () => {
  it('answers over-limit writes with 503 SlowDown that the SDK surfaces as a server fault', async () => {
    const proxy = await proxyWith({ writesPerSecond: 0 });
    const error = await rejection(
      clientFor(proxy, 1).send(
        new PutObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=2.json', Body: '{}' }),
      ),
    );
    expect(error.name).toBe('SlowDown');
    expect(error.$metadata.httpStatusCode).toBe(503);
    expect(error.$fault).toBe('server');
    expect(error.message).toBe('Please reduce your request rate.');
    expect(error.$metadata.requestId).toMatch(/^[0-9A-F]{16}$/);
    expect(proxy.model.stats().byPrefix['t=acme/']).toMatchObject({ requests: 1, throttled: 1 });
    // Reads have their own bucket: the same prefix still serves GETs.
    const got = await clientFor(proxy, 1).send(
      new GetObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' }),
    );
    expect(await got.Body!.transformToString()).toBe('{"a":1}');
  });

  it('SlowDown and InternalError are retryable by the SDK own classification; NoSuchKey is not', async () => {
    const throttled = await proxyWith({ writesPerSecond: 0 });
    const slowDown = await rejection(
      clientFor(throttled, 2).send(new PutObjectCommand({ Bucket: bucket, Key: 't=r/x', Body: '{}' })),
    );
    expect(slowDown.name).toBe('SlowDown');
    expect(slowDown.$metadata.attempts).toBe(2);
    expect(throttled.model.stats().total.throttled).toBe(2);

    const failing = await proxyWith({ faults: { internalErrorRate: 1 } });
    const internal = await rejection(
      clientFor(failing, 2).send(new GetObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' })),
    );
    expect(internal.name).toBe('InternalError');
    expect(internal.$metadata.httpStatusCode).toBe(500);
    expect(internal.$metadata.attempts).toBe(2);
    expect(failing.model.stats().total.internalErrors).toBe(2);

    const clean = await proxyWith({});
    const missing = await rejection(
      clientFor(clean, 2).send(new GetObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/missing.json' })),
    );
    expect(missing.name).toBe('NoSuchKey');
    expect(missing.$metadata.attempts).toBe(1);
  });

  it('answers a throttled HEAD with a bare 503 (no body, as S3 does)', async () => {
    const proxy = await proxyWith({ readsPerSecond: 0 });
    const error = await rejection(
      clientFor(proxy, 1).send(new HeadObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' })),
    );
    expect(error.$metadata.httpStatusCode).toBe(503);
  });

  it('resets the connection: the SDK sees a network error and retries it', async () => {
    const proxy = await proxyWith({ faults: { resetRate: 1 } });
    const error = await rejection(
      clientFor(proxy, 2).send(new GetObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' })),
    );
    expect((error as Error & { code?: string }).code).toBe('ECONNRESET');
    expect(proxy.model.stats().total.resets).toBe(2);
  });

  it('stalls without answering until the client aborts, then lets go of the request', async () => {
    const proxy = await proxyWith({ faults: { stallRate: 1 } });
    const started = performance.now();
    const call = clientFor(proxy, 1).send(
      new GetObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' }),
      {
        abortSignal: AbortSignal.timeout(300),
      },
    );
    await expect(call).rejects.toMatchObject({ name: expect.stringMatching(/Abort|Timeout/) });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(proxy.model.stats().total.stalls).toBe(1);
    await vi.waitFor(() => expect(proxy.heldRequests()).toBe(0), { timeout: 2000, interval: 10 });
  });

  it('serves a stalled request late when the stall ends before the client gives up', async () => {
    const proxy = await proxyWith({ faults: { stallRate: 1, stallMs: 150 } });
    const started = performance.now();
    const got = await clientFor(proxy, 1).send(
      new GetObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' }),
    );
    expect(await got.Body!.transformToString()).toBe('{"a":1}');
    expect(performance.now() - started).toBeGreaterThanOrEqual(145);
  });

  it('adds the modelled latency before answering', async () => {
    const proxy = await proxyWith({ latency: { medianMs: 60, p99Ms: 61 } });
    const client = clientFor(proxy, 1);
    const started = performance.now();
    for (let i = 0; i < 5; i++)
      await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 't=acme/r=o/id=1.json' }));
    expect((performance.now() - started) / 5).toBeGreaterThanOrEqual(55);
  });
});

describe('chaos proxy: rates over real HTTP', () => {
  it('accepts writes at the configured per-prefix rate (within 10%) and throttles the rest', async () => {
    const rate = 50;
    // A half-second bucket rides out event-loop pauses of this busy machine without losing tokens; the
    // burst is subtracted below.
    const burstSeconds = 0.5;
    const proxy = await proxyWith({ writesPerSecond: rate, burstSeconds });
    // Plain HTTP PUTs: cheap enough to offer well over the limit even on a busy 2-core machine.
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const put = (key: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${proxy.endpoint}/${bucket}/${key}`, { agent, method: 'PUT' }, (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
        });
        req.once('error', reject);
        req.end('{}');
      });
    const durationMs = 2000;
    let accepted = 0;
    let throttled = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async (_, worker) => {
        for (let i = 0; performance.now() - started < durationMs; i++) {
          const status = await put(`t=rate/w${worker}-${i}`);
          if (status === 200) accepted++;
          else if (status === 503) throttled++;
          else throw new Error(`unexpected status ${status}`);
        }
      }),
    );
    const elapsedSeconds = (performance.now() - started) / 1000;
    agent.destroy();
    const acceptedRate = (accepted - rate * burstSeconds) / elapsedSeconds;
    // The limit was really reached: at least 20% more was offered than accepted (a run below the limit
    // would be all accepted, burst included).
    expect(throttled).toBeGreaterThan(accepted * 0.2);
    expect(acceptedRate).toBeGreaterThan(rate * 0.9);
    expect(acceptedRate).toBeLessThan(rate * 1.1);
    expect(proxy.model.stats().byPrefix['t=rate/']).toMatchObject({ ok: accepted, throttled });
  });

  it('injects 500s and resets at their configured rates over 2,000 requests', async () => {
    const n = 2000;
    const proxy = await proxyWith({
      readsPerSecond: Number.POSITIVE_INFINITY,
      faults: { internalErrorRate: 0.15, resetRate: 0.15 },
    });
    // The default seed makes the run repeat exactly; the proxy must deliver what the model decided, and the
    // model's draws must land within 10% of the configured rates.
    // Plain HTTP HEADs rather than the SDK: 2,000 SDK calls would cost seconds of CPU on this 2-core machine.
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const url = new URL(`${proxy.endpoint}/${bucket}/t=acme/r=o/id=1.json`);
    const observed = { ok: 0, internalErrors: 0, resets: 0 };
    const get = () =>
      new Promise<void>((resolve) => {
        const req = request(url, { agent, method: 'HEAD' }, (res) => {
          res.resume();
          res.once('end', () => {
            if (res.statusCode === 200) observed.ok++;
            else if (res.statusCode === 500) observed.internalErrors++;
            resolve();
          });
        });
        req.once('error', () => {
          observed.resets++;
          resolve();
        });
        req.end();
      });
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next++ < n) await get();
      }),
    );
    agent.destroy();
    const { total } = proxy.model.stats();
    expect(total.requests).toBe(n);
    expect(observed).toEqual({ ok: total.ok, internalErrors: total.internalErrors, resets: total.resets });
    expect(total.internalErrors / n).toBeGreaterThan(0.15 * 0.9);
    expect(total.internalErrors / n).toBeLessThan(0.15 * 1.1);
    expect(total.resets / n).toBeGreaterThan(0.15 * 0.9);
    expect(total.resets / n).toBeLessThan(0.15 * 1.1);
  });
});

describe('classifyS3Request', () => {
  it('classifies by method and keys on the object key after the bucket (or the listed prefix)', () => {
    expect(classifyS3Request('PUT', '/bkt/t=acme/r=o/id=1.json?x-id=PutObject')).toEqual({
      kind: 'write',
      key: 't=acme/r=o/id=1.json',
    });
    expect(classifyS3Request('DELETE', '/bkt/t%3Dacme/a%20b')).toEqual({ kind: 'write', key: 't=acme/a b' });
    expect(classifyS3Request('HEAD', '/bkt/t=a/k')).toEqual({ kind: 'read', key: 't=a/k' });
    expect(classifyS3Request('GET', '/bkt?list-type=2&prefix=t%3Dacme%2Fr%3Do%2F')).toEqual({
      kind: 'read',
      key: 't=acme/r=o/',
    });
    expect(classifyS3Request('POST', '/bkt?delete')).toEqual({ kind: 'write', key: '' });
  });
});

describe('chaos proxy: S3 conditional writes pass through it with their answers (the embedded S3 enforces them)', () => {
  it('answers If-None-Match: * on an existing key and a stale If-Match with 412, If-Match on no object with 404', async () => {
    const proxy = await proxyWith({});
    const client = clientFor(proxy, 1);
    const key = `t=acme/r=o/id=cond-${randomUUID().slice(0, 8)}.json`;
    const created = await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":1}', IfNoneMatch: '*' }),
    );
    const again = await rejection(
      client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":2}', IfNoneMatch: '*' })),
    );
    expect([again.name, again.$metadata.httpStatusCode]).toEqual(['PreconditionFailed', 412]);
    const updated = await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":3}', IfMatch: created.ETag }),
    );
    expect(updated.ETag).not.toBe(created.ETag);
    // A writer holding the first ETag lost the race: it cannot overwrite the newer object.
    const stale = await rejection(
      client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{"v":4}', IfMatch: created.ETag })),
    );
    expect([stale.name, stale.$metadata.httpStatusCode]).toEqual(['PreconditionFailed', 412]);
    const body = await (
      await direct.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
    ).Body!.transformToString();
    expect(body).toBe('{"v":3}');
    const missing = await rejection(
      client.send(
        new PutObjectCommand({ Bucket: bucket, Key: `${key}.none`, Body: '{}', IfMatch: created.ETag }),
      ),
    );
    expect(missing.$metadata.httpStatusCode).toBe(404);
  });

  it('two writers racing with the same If-Match: exactly one wins', async () => {
    const proxy = await proxyWith({});
    const client = clientFor(proxy, 1);
    const key = `t=acme/r=o/id=race-${randomUUID().slice(0, 8)}.json`;
    const { ETag } = await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '0' }));
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: String(i + 1), IfMatch: ETag })),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(
      results
        .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
        .map((r) => (r.reason as S3ServiceException).$metadata.httpStatusCode),
    ).toEqual(Array(7).fill(412));
  });
});
