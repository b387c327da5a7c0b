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
        path: '/b/t%3Da/k.json',
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
  it('a plain write arriving while a conditional write is being checked waits for it: the newer object stays', async () => {
    const { stores } = await createFauxqsStores();
    const app = buildApp({ logger: false, stores });
    // Hold the gate's check (its HEAD of the key) open until the test lets it answer.
    let answerCheck!: () => void;
    const checkHeld = new Promise<void>((resolve) => {
      answerCheck = resolve;
    });
    let checkStarted!: () => void;
    const checking = new Promise<void>((resolve) => {
      checkStarted = resolve;
    });
    const original = app.inject.bind(app);
    const inject = (options: InjectOptions) => original(options);
    const heldInject = async (options: InjectOptions) => {
      const answer = await inject(options);
      if (options.method === 'HEAD') {
        checkStarted();
        await checkHeld;
      }
      return answer;
    };
    Object.assign(app, { inject: heldInject });
    // Tells when the plain write has reached the gate (hooks run in the order they were added).
    let plainArrived!: () => void;
    const plainAtGate = new Promise<void>((resolve) => {
      plainArrived = resolve;
    });
    app.addHook('preHandler', async (req) => {
      if (String(req.body) === 'plain') plainArrived();
    });
    const gate = enforceConditionalWrites(app);
    await inject({ method: 'PUT', url: '/bucket-one' });
    const base = await inject({ method: 'PUT', url: '/bucket-one/k', payload: 'base' });

    const conditional = inject({
      method: 'PUT',
      url: '/bucket-one/k',
      payload: 'conditional',
      headers: { 'if-match': String(base.headers.etag), 'content-type': 'text/plain' },
    });
    await checking;
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
    await plainAtGate;
    // Past the gate, the emulator would apply it within the next turns of the event loop.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(plainDone).toBe(false);
    expect((await inject({ method: 'GET', url: '/bucket-one/k' })).body).toBe('base');
    expect(gate.busyKeys).toBe(1);
    answerCheck();
    expect((await conditional).statusCode).toBe(200);
    expect((await plain).statusCode).toBe(200);
    expect((await inject({ method: 'GET', url: '/bucket-one/k' })).body).toBe('plain');
    expect(gate.busyKeys).toBe(0);
    await app.close();
  });
});
