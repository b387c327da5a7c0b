import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InjectOptions } from 'fastify';
import { buildApp } from 'fauxqs';
import { describe, expect, it } from 'vitest';
import { createFauxqsStores } from '../../../../lib/local/emulators/fauxqs-stores.js';
import {
  enforceConditionalWrites,
  objectWriteOf,
  refusalOf,
} from '../../../../lib/local/emulators/s3-conditional-writes.js';

const request = (method: string, url: string, headers: Record<string, string> = {}, body?: string) => ({
  method,
  url,
  headers,
  ...(body === undefined ? {} : { body: Buffer.from(body) }),
});

describe('which requests are object writes, and their conditions', () => {
  it('PUT, DELETE and CompleteMultipartUpload of a key; not reads, sub-resources, parts or bucket calls', () => {
    expect(objectWriteOf(request('PUT', '/b/t%3Da/k.json?x-id=PutObject', { 'if-none-match': '*' }))).toEqual(
      {
        bucket: 'b',
        keys: ['t=a/k.json'],
        condition: { ifNoneMatch: '*' },
      },
    );
    expect(objectWriteOf(request('DELETE', '/b/k', { 'if-match': '"e"' }))).toMatchObject({
      keys: ['k'],
      condition: { ifMatch: '"e"' },
    });
    expect(objectWriteOf(request('DELETE', '/b/k', { 'if-none-match': '*' }))).not.toHaveProperty(
      'condition',
    );
    expect(objectWriteOf(request('POST', '/b/k?uploadId=u', { 'if-none-match': '*' }))).toMatchObject({
      keys: ['k'],
    });
    for (const [method, url] of [
      ['GET', '/b/k'],
      ['HEAD', '/b/k'],
      ['PUT', '/b/k?tagging'],
      ['PUT', '/b/k?partNumber=1&uploadId=u'],
      ['DELETE', '/b/k?uploadId=u'],
      ['POST', '/b/k?uploads'],
      ['PUT', '/b'],
    ] as const) {
      expect(objectWriteOf(request(method, url)), `${method} ${url}`).toBeUndefined();
    }
  });

  it('DeleteObjects writes every key of its body (XML-escaped keys decoded)', () => {
    const xml = '<Delete><Object><Key>a&amp;b</Key></Object><Object><Key>c</Key></Object></Delete>';
    expect(objectWriteOf(request('POST', '/b?delete', {}, xml))).toMatchObject({
      bucket: 'b',
      keys: ['a&b', 'c'],
    });
  });

  it('answers as S3 does for each condition and state', () => {
    const status = (condition: { ifNoneMatch?: string; ifMatch?: string }, current?: string) =>
      refusalOf(condition, current)?.('k').status;
    expect(status({ ifNoneMatch: '*' })).toBeUndefined();
    expect(status({ ifNoneMatch: '*' }, '"e"')).toBe(412);
    expect(status({ ifNoneMatch: '"e"' })).toBe(501);
    expect(status({ ifMatch: '"e"' }, '"e"')).toBeUndefined();
    expect(status({ ifMatch: 'e' }, '"e"')).toBeUndefined();
    expect(status({ ifMatch: 'W/"e"' }, '"e"')).toBeUndefined();
    expect(status({ ifMatch: '"x", "e"' }, '"e"')).toBeUndefined();
    expect(status({ ifMatch: '"x"' }, '"e"')).toBe(412);
    expect(status({ ifMatch: '"x"' })).toBe(404);
    expect(refusalOf({ ifMatch: '"x"' }, '"e"')?.('k')).toMatchObject({
      code: 'PreconditionFailed',
      detail: '<Condition>If-Match</Condition>',
    });
    expect(refusalOf({ ifMatch: '"x"' }, undefined)?.('a<b')).toMatchObject({
      code: 'NoSuchKey',
      detail: '<Key>a&lt;b</Key>',
    });
  });
});

describe('the gate holds a key from the condition check until the write is applied', () => {
  it('a plain write arriving while a checked conditional write is on its way to the emulator waits for it', async () => {
    const { stores, s3 } = await createFauxqsStores();
    const app = buildApp({ logger: false, stores });
    const inject = (options: InjectOptions) => app.inject(options);
    const gate = enforceConditionalWrites(app, s3);
    // Holds the conditional write between the gate's check and the emulator's handler until the test lets it
    // go, and tells when the plain write has passed the same point (hooks run in the order they were added).
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let conditionalPassed!: () => void;
    const conditionalPastCheck = new Promise<void>((resolve) => {
      conditionalPassed = resolve;
    });
    let plainPassed = false;
    app.addHook('preHandler', async (req) => {
      if (String(req.body) === 'plain') plainPassed = true;
      if (String(req.body) !== 'conditional') return;
      conditionalPassed();
      await held;
    });
    await inject({ method: 'PUT', url: '/bucket-one' });
    const base = await inject({ method: 'PUT', url: '/bucket-one/k', payload: 'base' });

    const conditional = inject({
      method: 'PUT',
      url: '/bucket-one/k',
      payload: 'conditional',
      headers: { 'if-match': String(base.headers.etag), 'content-type': 'text/plain' },
    });
    await conditionalPastCheck;
    let plainDone = false;
    const plain = inject({
      method: 'PUT',
      url: '/bucket-one/k',
      payload: 'plain',
      headers: { 'content-type': 'text/plain' },
    }).then((answer) => {
      plainDone = true;
      return answer;
    });
    // Unheld, the plain write would pass the gate and be applied within the next turns of the event loop.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect([plainPassed, plainDone]).toEqual([false, false]);
    expect((await inject({ method: 'GET', url: '/bucket-one/k' })).body).toBe('base');
    expect(gate.busyKeys).toBe(1);
    release();
    expect((await conditional).statusCode).toBe(200);
    expect((await plain).statusCode).toBe(200);
    expect((await inject({ method: 'GET', url: '/bucket-one/k' })).body).toBe('plain');
    expect(gate.busyKeys).toBe(0);
    await app.close();
  });
});

describe('clients that vanish never leave a key held', () => {
  it('a PUT cut off mid-body, and one whose client leaves while it waits for the key: the key is free after', async () => {
    const { stores, s3 } = await createFauxqsStores();
    const app = buildApp({ logger: false, stores });
    // Marks when a request reaches the gate (hooks run in the order they were added), and holds the first
    // writer of the key after the gate, so the next one waits for the key.
    let waiterAtGate!: () => void;
    const waiting = new Promise<void>((resolve) => {
      waiterAtGate = resolve;
    });
    app.addHook('preHandler', async (req) => {
      if (String(req.body) === 'waiter') waiterAtGate();
    });
    const gate = enforceConditionalWrites(app, s3);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    app.addHook('preHandler', async (req) => {
      if (String(req.body) === 'holder') await held;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const open = (length: number) =>
      httpRequest({
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: '/bucket-two/k',
        headers: { 'content-type': 'text/plain', 'content-length': length },
      }).on('error', () => {});
    try {
      await app.inject({ method: 'PUT', url: '/bucket-two' });
      // Cut off mid-body: the emulator never gets a whole request, so nothing reaches the gate.
      const cut = open(100);
      cut.write('0123456789');
      await new Promise((resolve) => setImmediate(resolve));
      cut.destroy();

      const holder = app.inject({
        method: 'PUT',
        url: '/bucket-two/k',
        payload: 'holder',
        headers: { 'content-type': 'text/plain' },
      });
      const waiter = open(6);
      waiter.end('waiter');
      await waiting;
      waiter.destroy();
      release();
      expect((await holder).statusCode).toBe(200);
      // Queued behind both, so answered only once each has freed the key.
      const after = await app.inject({
        method: 'PUT',
        url: '/bucket-two/k',
        payload: 'after',
        headers: { 'content-type': 'text/plain' },
      });
      expect(after.statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/bucket-two/k' })).body).toBe('after');
      expect(gate.busyKeys).toBe(0);
    } finally {
      await app.close();
    }
  });
});
