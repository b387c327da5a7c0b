import { getEventListeners, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { HttpRequest } from '@smithy/core/protocols';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterEach, describe, expect, it } from 'vitest';
import { withRequestSignal } from '../../../lib/db/request-signal.js';
import { UndiciHttpHandler } from '../../../lib/db/undici-http-handler.js';
import { isThrottling, isTimeout, isTransient } from '../../../lib/errors/classify.js';

type Respond = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface TestServer {
  readonly port: number;
  readonly sockets: Set<Socket>;
  /** Sockets the server has seen close. */
  readonly closed: Set<Socket>;
  readonly requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  stop(): Promise<void>;
}

const servers: TestServer[] = [];
const handlers: { destroy(): void }[] = [];

afterEach(async () => {
  for (const handler of handlers.splice(0)) handler.destroy();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function serve(respond: Respond): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const closed = new Set<Socket>();
  const requests: TestServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      respond(req, res, body);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => closed.add(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const created: TestServer = {
    port: (server.address() as AddressInfo).port,
    sockets,
    closed,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(created);
  return created;
}

function undici(options: ConstructorParameters<typeof UndiciHttpHandler>[0] = {}): UndiciHttpHandler {
  const handler = new UndiciHttpHandler(options);
  handlers.push(handler);
  return handler;
}

function nodeHttp(options: ConstructorParameters<typeof NodeHttpHandler>[0] = {}): NodeHttpHandler {
  // As createAwsClients builds it: without throwOnRequestTimeout this smithy version only logs a warning.
  const handler = new NodeHttpHandler({
    httpAgent: { keepAlive: true },
    throwOnRequestTimeout: true,
    ...options,
  });
  handlers.push(handler);
  return handler;
}

function put(port: number, init: Partial<ConstructorParameters<typeof HttpRequest>[0]> = {}): HttpRequest {
  return new HttpRequest({
    protocol: 'http:',
    hostname: '127.0.0.1',
    port,
    method: 'PUT',
    path: '/bucket/key',
    headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json', 'content-length': '2' },
    body: '{}',
    ...init,
  });
}

async function text(body: unknown): Promise<string> {
  let out = '';
  for await (const chunk of body as AsyncIterable<Buffer>) out += chunk.toString('utf8');
  return out;
}

/** How the error taxonomy reads a failure: what the pool's retries and the congestion signal act on. */
function classified(error: unknown) {
  return {
    name: (error as Error).name,
    timeout: isTimeout(error),
    transient: isTransient(error),
    throttling: isThrottling(error),
  };
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  const outcome = await promise.then(
    () => ({ failed: false as const }),
    (error: unknown) => ({ failed: true as const, error }),
  );
  expect(outcome.failed).toBe(true);
  return outcome.failed ? outcome.error : undefined;
}

describe('UndiciHttpHandler: the request on the wire and the response the SDK reads', () => {
  it('sends the method, path, query, headers and body, and answers status, headers and a readable body', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('ETag', '"e1"');
      res.setHeader('x-amz-meta-a', ['1', '2']);
      res.writeHead(201, { 'content-type': 'text/plain' });
      res.end('stored');
    });
    const request = put(server.port, {
      query: { 'x-id': 'PutObject', list: ['b', 'a'], flag: null },
      headers: {
        host: `127.0.0.1:${server.port}`,
        'content-length': '13',
        authorization: 'AWS4-HMAC-SHA256 x',
      },
      body: '{"id":"ü-1"}',
    });
    request.headers['content-length'] = String(Buffer.byteLength(request.body as string));
    const { response } = await undici().handle(request);
    expect(response.statusCode).toBe(201);
    expect(response.headers.etag).toBe('"e1"');
    // Joined as Node's IncomingMessage joins them.
    expect(response.headers['x-amz-meta-a']).toBe('1, 2');
    expect(await text(response.body)).toBe('stored');
    expect(server.requests).toEqual([
      expect.objectContaining({
        method: 'PUT',
        url: '/bucket/key?flag&list=b&list=a&x-id=PutObject',
        body: '{"id":"ü-1"}',
        headers: expect.objectContaining({
          host: `127.0.0.1:${server.port}`,
          authorization: 'AWS4-HMAC-SHA256 x',
        }),
      }),
    ]);
  });

  it('sends a body the SDK marked `Expect: 100-continue` without waiting for a 100 (undici refuses the header)', async () => {
    const server = await serve((_req, res, body) => res.end(`got ${body.length}`));
    const request = put(server.port);
    request.headers.Expect = '100-continue';
    const { response } = await undici().handle(request);
    expect(await text(response.body)).toBe('got 2');
    expect(server.requests[0]?.headers.expect).toBeUndefined();
    // Only the refused header goes: the others arrive as the SDK set them (those it signed among them).
    expect(server.requests[0]).toMatchObject({
      url: '/bucket/key',
      headers: { 'content-type': 'application/json', 'content-length': '2' },
    });
    expect(request.headers.Expect).toBe('100-continue');
  });

  it('streams a body of unknown length the SDK marked `Transfer-Encoding: chunked` (undici refuses the header)', async () => {
    const server = await serve((_req, res, body) => res.end(`got ${body}`));
    const request = put(server.port, {
      headers: { host: `127.0.0.1:${server.port}`, 'Transfer-Encoding': 'chunked' },
      body: Readable.from([Buffer.from('{"a":'), Buffer.from('1}')]),
    });
    const { response } = await undici().handle(request);
    expect(await text(response.body)).toBe('got {"a":1}');
    expect(server.requests[0]?.headers['transfer-encoding']).toBe('chunked');
  });

  it('opens new connections for requests after destroy(), as the SDK handler does', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const handler = undici();
    expect(await text((await handler.handle(put(server.port))).response.body)).toBe('ok');
    handler.destroy();
    handler.destroy();
    expect(await text((await handler.handle(put(server.port))).response.body)).toBe('ok');
    expect(server.sockets.size).toBe(2);
  });

  it('keeps its connections alive across sequential requests and closes them on destroy()', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const handler = new UndiciHttpHandler();
    for (let i = 0; i < 6; i++) {
      const { response } = await handler.handle(put(server.port));
      expect(await text(response.body)).toBe('ok');
    }
    // A body read to its end resolves just before undici frees its connection: the next request may take
    // a second one, never a connection per request.
    expect(server.sockets.size).toBeLessThanOrEqual(2);
    expect(server.closed.size).toBe(0);
    handler.destroy();
    await expect.poll(() => server.closed.size).toBe(server.sockets.size);
  });

  it('opens at most maxSockets connections per origin; further requests wait for one', async () => {
    const waiting: ServerResponse[] = [];
    const server = await serve((_req, res) => waiting.push(res));
    const handler = undici({ maxSockets: 2 });
    const pending = [1, 2, 3].map(() => handler.handle(put(server.port)));
    await expect.poll(() => waiting.length).toBe(2);
    expect(server.sockets.size).toBe(2);
    for (const res of waiting.splice(0)) res.end('ok');
    await expect.poll(() => waiting.length).toBe(1);
    waiting[0]?.end('ok');
    const responses = await Promise.all(pending);
    expect(await Promise.all(responses.map(({ response }) => text(response.body)))).toEqual([
      'ok',
      'ok',
      'ok',
    ]);
    expect(server.sockets.size).toBe(2);
  });

  it('takes the SDK config keys under symbols and refuses to change its own after construction', () => {
    const handler = undici({ maxSockets: 7, connectionTimeout: 500, requestTimeout: 900 });
    handler.updateHttpClientConfig(Symbol.for('logger') as never, 1);
    expect(handler.httpHandlerConfigs()).toEqual({
      maxSockets: 7,
      connectionTimeout: 500,
      requestTimeout: 900,
    });
    expect(() => handler.updateHttpClientConfig('maxSockets', 9)).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringContaining('maxSockets') }),
    );
  });
});

describe('UndiciHttpHandler: cancellation', () => {
  it('takes the signal from the async context; an abort rejects with an AbortError and destroys the connection', async () => {
    const held: ServerResponse[] = [];
    const server = await serve((_req, res) => held.push(res));
    const handler = undici();
    const controller = new AbortController();
    const reason = new Error('pool timeout');
    const pending = withRequestSignal(controller.signal, () => handler.handle(put(server.port)));
    await expect.poll(() => held.length).toBe(1);
    controller.abort(reason);
    const error = await failureOf(pending);
    expect(error).toMatchObject({ name: 'AbortError', message: 'Request aborted', cause: reason });
    const carried = held[0]?.socket;
    await expect
      .poll(() => carried !== null && carried !== undefined && server.closed.has(carried))
      .toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it('leaves no listener on a signal shared by many requests, answered, failed or aborted', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/bucket/reset') req.socket.destroy();
      else res.end('ok');
    });
    const handler = undici();
    const deadline = new AbortController();
    const all = Array.from({ length: 20 }, (_, i) =>
      withRequestSignal(deadline.signal, () =>
        handler.handle(put(server.port, i % 4 === 0 ? { path: '/bucket/reset' } : {})),
      ).then(
        ({ response }) => text(response.body),
        (error: unknown) => classified(error).name,
      ),
    );
    const outcomes = await Promise.all(all);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(15);
    expect(outcomes.filter((o) => o === 'TimeoutError')).toHaveLength(5);
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0);
    const perCall = new AbortController();
    const pending = withRequestSignal(perCall.signal, () => handler.handle(put(server.port)));
    perCall.abort();
    await failureOf(pending);
    expect(getEventListeners(perCall.signal, 'abort')).toHaveLength(0);
  });

  it('prefers the signal the SDK passes, and rejects an aborted one before anything is sent', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const handler = undici();
    const outer = new AbortController();
    const passed = new AbortController();
    passed.abort('deadline');
    const error = await failureOf(
      withRequestSignal(outer.signal, () => handler.handle(put(server.port), { abortSignal: passed.signal })),
    );
    expect(error).toMatchObject({ name: 'AbortError', message: 'deadline' });
    expect(server.requests).toEqual([]);
    expect(server.sockets.size).toBe(0);
  });

  it('aborting while the body streams ends the body with an error and the connection', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
    });
    const handler = undici();
    const controller = new AbortController();
    const { response } = await withRequestSignal(controller.signal, () => handler.handle(put(server.port)));
    const second = await withRequestSignal(controller.signal, () => handler.handle(put(server.port)));
    const reading = [text(response.body), text(second.response.body)].map(failureOf);
    const reason = new Error('deadline');
    controller.abort(reason);
    const [first, other] = await Promise.all(reading);
    // Node's IncomingMessage error when its request is destroyed, fresh per request: the SDK decorates the
    // error a body fails with, and the reason is shared by every request under one deadline.
    expect(first).toMatchObject({ message: 'aborted', code: 'ECONNRESET', cause: reason });
    expect(other).toMatchObject({ message: 'aborted', code: 'ECONNRESET', cause: reason });
    expect(first).not.toBe(other);
    expect(classified(first)).toMatchObject({ transient: true });
    for (const carried of server.sockets) await expect.poll(() => server.closed.has(carried)).toBe(true);
  });

  it('settles at once on abort while the connection is still being made (no connect timeout to wait for)', async () => {
    // A TCP server that accepts and never speaks: the TLS handshake of an https origin stalls.
    const silent = createTcpServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const request = put((silent.address() as AddressInfo).port, { protocol: 'https:' });
      const controller = new AbortController();
      const pending = withRequestSignal(controller.signal, () =>
        undici({ connectionTimeout: 0 }).handle(request),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      const reason = new Error('deadline');
      controller.abort(reason);
      expect(await failureOf(pending)).toMatchObject({ name: 'AbortError', cause: reason });
    } finally {
      silent.close();
    }
  });
});

describe("UndiciHttpHandler: failures in the SDK's NodeHttpHandler shapes", () => {
  const handlersUnderTest = [
    ['undici', (options: { requestTimeout?: number; connectionTimeout?: number }) => undici(options)],
    [
      'NodeHttpHandler',
      (options: { requestTimeout?: number; connectionTimeout?: number }) => nodeHttp(options),
    ],
  ] as const;

  it.each(handlersUnderTest)(
    '%s: a connection reset under the request reads as a transient timeout',
    async (_n, make) => {
      const server = await serve((req) => req.socket.destroy());
      const error = await failureOf(make({}).handle(put(server.port)));
      expect(classified(error)).toEqual({
        name: 'TimeoutError',
        timeout: true,
        transient: true,
        throttling: false,
      });
    },
  );

  it.each(handlersUnderTest)(
    '%s: a server that never answers fails after requestTimeout as a TimeoutError',
    async (_n, make) => {
      const server = await serve(() => {
        // holds every request
      });
      const started = performance.now();
      const error = await failureOf(make({ requestTimeout: 200 }).handle(put(server.port)));
      expect(classified(error)).toEqual({
        name: 'TimeoutError',
        timeout: true,
        transient: true,
        throttling: false,
      });
      expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    },
  );

  it.each(handlersUnderTest)(
    '%s: an abort without a reason, or a falsy one, says "Request aborted"',
    async (_n, make) => {
      const server = await serve((_req, res) => res.end('ok'));
      for (const reason of [undefined, null, 0]) {
        const controller = new AbortController();
        controller.abort(reason);
        const error = await failureOf(make({}).handle(put(server.port), { abortSignal: controller.signal }));
        expect(error).toMatchObject({ name: 'AbortError', message: 'Request aborted' });
      }
    },
  );

  it.each(handlersUnderTest)(
    '%s: a request in flight when the handler is destroyed fails transient',
    async (_n, make) => {
      const server = await serve(() => undefined);
      const handler = make({});
      const pending = failureOf(handler.handle(put(server.port)));
      await expect.poll(() => server.requests.length).toBe(1);
      handler.destroy();
      expect(classified(await pending)).toEqual({
        name: 'TimeoutError',
        timeout: true,
        transient: true,
        throttling: false,
      });
    },
  );

  it.each(handlersUnderTest)('%s: a refused connection is transient and keeps its code', async (_n, make) => {
    const server = await serve(() => undefined);
    const port = server.port;
    await servers.splice(servers.indexOf(server), 1)[0]?.stop();
    const error = await failureOf(make({}).handle(put(port)));
    expect(error).toMatchObject({ code: 'ECONNREFUSED' });
    // Not renamed: a refused connection is no timeout (nothing was sent; the pool retries it all the same).
    expect(classified(error)).toEqual({ name: 'Error', timeout: false, transient: true, throttling: false });
  });

  it("a connection that does not finish within connectionTimeout fails as a TimeoutError with undici's code", async () => {
    // A TCP server that accepts and never speaks: the TLS handshake of an https origin stalls.
    const silent = createTcpServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const port = (silent.address() as AddressInfo).port;
    try {
      const request = put(port, { protocol: 'https:' });
      const error = await failureOf(undici({ connectionTimeout: 200 }).handle(request));
      expect(error).toMatchObject({ code: 'UND_ERR_CONNECT_TIMEOUT' });
      expect(classified(error)).toEqual({
        name: 'TimeoutError',
        timeout: true,
        transient: true,
        throttling: false,
      });
    } finally {
      silent.close();
    }
  });
});
