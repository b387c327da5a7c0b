import { EventEmitter } from 'node:events';
import { buildQueryString, type HttpHandler, type HttpRequest, HttpResponse } from '@smithy/core/protocols';
import type { Dispatcher } from 'undici';
import request from 'undici/lib/api/api-request.js';
import Agent from 'undici/lib/dispatcher/agent.js';
import { currentRequestSignal, SIGNAL_SCOPED } from './request-signal.js';

// Why undici and not the SDK's NodeHttpHandler: per S3 request, Node's `http` client (ClientRequest,
// IncomingMessage, the agent's socket bookkeeping, a header write and a body write) is about half of the
// handler's CPU; undici's pool writes the head and a small body in one go and parses with llhttp in wasm.
// bench:db measures the two side by side (docs/cpu.md).

type HandleOptions = Parameters<HttpHandler['handle']>[1];
type Handled = ReturnType<HttpHandler['handle']>;

const noop = (): void => {};

export interface UndiciHttpHandlerOptions {
  /**
   * Connections per origin (host and port). Must be >= the concurrency of every pool sharing the client,
   * or requests queue invisibly inside undici.
   * @default 100
   * @example { maxSockets: 256 }
   */
  maxSockets?: number;
  /**
   * Milliseconds to establish a connection (TCP and TLS); past it the request fails with a `TimeoutError`.
   * @default 3000
   * @example { connectionTimeout: 1000 }
   */
  connectionTimeout?: number;
  /**
   * Milliseconds of silence allowed while waiting for the response's headers, and then between two chunks
   * of its body; past it the request fails with a `TimeoutError`, or its body with undici's
   * `UND_ERR_BODY_TIMEOUT` (which the error taxonomy reads as a timeout). 0: none (the caller's abort
   * signal, the pool's per-task timeout, bounds the request).
   * @default 0
   * @example { requestTimeout: 5000 }
   */
  requestTimeout?: number;
}

/**
 * How long an idle connection is kept for the next request. S3 closes connections idle for about 20 s;
 * a client keeping one longer may send on a socket the server is closing (a reset, which the pool
 * retries). undici's own default, 4 s, would reconnect (a TLS handshake) between invocations a few
 * seconds apart, which Node's keep-alive agent did not.
 */
const KEEP_ALIVE_MS = 15_000;

/**
 * Failures before the response the SDK's `NodeHttpHandler` reports as a `TimeoutError` (it renames
 * `ECONNRESET`, `EPIPE` and `ETIMEDOUT`, and names its own connection and socket timeouts so), with undici's
 * codes for the same events: a socket closed or reset under a request, its connect and headers timeouts.
 * The name is what the error taxonomy (`lib/errors/classify.ts`) reads; the code stays. A body timeout
 * fails the body stream after the response is handed over: the taxonomy reads its code.
 */
const TIMEOUT_LIKE_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  // The handler destroyed under the request: Node's agent resets its sockets (ECONNRESET) in that case.
  'UND_ERR_DESTROYED',
]);

/**
 * The error `NodeHttpHandler` rejects with when the request's signal aborts before the response: an
 * `AbortError`, with the reason as its `cause` when it is an error, or its text when it is some other
 * truthy value.
 */
export function requestAbortedError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  const error = !reason
    ? new Error('Request aborted')
    : reason instanceof Error
      ? new Error('Request aborted', { cause: reason })
      : new Error(String(reason));
  error.name = 'AbortError';
  return error;
}

/**
 * What a response body being read fails with when the request's signal aborts: Node's `IncomingMessage`
 * error when its request is destroyed (`aborted`, code `ECONNRESET`), a fresh one per request, the reason
 * as its `cause`. Never the reason itself: the SDK's deserializer decorates the error a body fails with,
 * and a reason is shared by every request under one deadline.
 */
function bodyAbortedError(signal: AbortSignal): Error {
  return Object.assign(new Error('aborted', { cause: signal.reason }), { code: 'ECONNRESET' });
}

/**
 * The abort signal undici gets for one request: an `EventEmitter` (undici takes one in place of an
 * `AbortSignal`, reading its `reason`), a fraction of an `AbortController`'s cost per request.
 */
class AbortEmitter extends EventEmitter {
  reason: unknown = undefined;

  abort(reason: unknown): void {
    this.reason = reason;
    this.emit('abort');
  }
}

/** An undici failure before the response, in the shape the SDK's `NodeHttpHandler` gives the same event. */
function requestFailedError(error: Error): Error {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && TIMEOUT_LIKE_CODES.has(code)) error.name = 'TimeoutError';
  return error;
}

/** Response headers as the SDK expects them: one string per name (repeated ones joined with `, `, as Node joins them). */
function singleValued(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  for (const name in headers) {
    if (typeof headers[name] !== 'string') return joined(headers);
  }
  return headers as Record<string, string>;
}

function joined(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) out[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return out;
}

/**
 * Headers undici refuses because it owns what they ask for: `Expect` (it does not do `100-continue`; the S3
 * client adds one to bodies of 2 MB and more, and without it the body follows the head at once, which S3
 * accepts) and `Transfer-Encoding` (the SDK sets `chunked` on a streamed body of unknown length, its
 * aws-chunked uploads; undici chunks such a body itself).
 */
function sendableHeaders(headers: HttpRequest['headers']): HttpRequest['headers'] {
  let sendable = headers;
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (lower !== 'expect' && lower !== 'transfer-encoding') continue;
    if (sendable === headers) sendable = { ...headers };
    delete sendable[name];
  }
  return sendable;
}

/**
 * The SDK's `HttpHandler` on an undici `Agent`: keep-alive connection pools per origin, sized by `maxSockets`,
 * closed by `destroy()` (the client's `destroy()` calls it; a later request opens new ones, as the SDK's
 * handler does). It takes the abort signal of a request from the async context of the call
 * (`withRequestSignal`) when the SDK passes none. An abort settles the request at once, whether it waits
 * for a connection, for its response or streams its body, and destroys its connection. Failures keep the
 * shapes of the SDK's `NodeHttpHandler`: an `AbortError` on abort before the response, a body failing with
 * `aborted` (`ECONNRESET`) on abort after it, a `TimeoutError` (with undici's or Node's `code`) on a timeout
 * or a connection lost under the request, Node's error as is otherwise (`ECONNREFUSED`, ...).
 */
export class UndiciHttpHandler implements HttpHandler<UndiciHttpHandlerOptions> {
  readonly [SIGNAL_SCOPED] = true;
  readonly metadata = { handlerProtocol: 'http/1.1' };
  readonly #config: Required<UndiciHttpHandlerOptions>;
  #agent: InstanceType<typeof Agent> | undefined;

  constructor(options: UndiciHttpHandlerOptions = {}) {
    this.#config = {
      maxSockets: options.maxSockets ?? 100,
      connectionTimeout: options.connectionTimeout ?? 3000,
      requestTimeout: options.requestTimeout ?? 0,
    };
  }

  #dispatcher(): InstanceType<typeof Agent> {
    this.#agent ??= new Agent({
      connections: this.#config.maxSockets,
      keepAliveTimeout: KEEP_ALIVE_MS,
      connectTimeout: this.#config.connectionTimeout,
      headersTimeout: this.#config.requestTimeout,
      bodyTimeout: this.#config.requestTimeout,
    });
    return this.#agent;
  }

  handle(httpRequest: HttpRequest, options: HandleOptions = {}): Handled {
    const signal = (options.abortSignal as AbortSignal | undefined) ?? currentRequestSignal();
    if (signal?.aborted === true) return Promise.reject(requestAbortedError(signal));
    const query = httpRequest.query === undefined ? '' : buildQueryString(httpRequest.query);
    const port = httpRequest.port === undefined ? '' : `:${httpRequest.port}`;
    const body = httpRequest.body as Dispatcher.RequestOptions['body'];
    return new Promise((resolve, reject) => {
      // undici acts on an abort only once the request holds a connection, and fails the body with the
      // signal's reason itself. The caller's signal settles the request here at once; undici gets a signal
      // of its own, aborted with a fresh error per request.
      let undiciSignal: AbortEmitter | null = null;
      let release = noop;
      if (signal !== undefined) {
        const emitter = new AbortEmitter();
        undiciSignal = emitter;
        const onAbort = (): void => {
          emitter.abort(bodyAbortedError(signal));
          reject(requestAbortedError(signal));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        release = () => signal.removeEventListener('abort', onAbort);
      }
      request.call(
        this.#dispatcher(),
        {
          origin: `${httpRequest.protocol}//${httpRequest.hostname}${port}`,
          path: query === '' ? httpRequest.path : `${httpRequest.path}?${query}`,
          method: httpRequest.method as Dispatcher.HttpMethod,
          headers: sendableHeaders(httpRequest.headers),
          body: body ?? null,
          signal: undiciSignal,
        },
        (error, data) => {
          if (error !== null) {
            release();
            reject(requestFailedError(error));
            return;
          }
          if (release !== noop) data.body.once('close', release);
          resolve({
            response: new HttpResponse({
              statusCode: data.statusCode,
              headers: singleValued(data.headers),
              body: data.body,
            }),
          });
        },
      );
    });
  }

  updateHttpClientConfig(key: keyof UndiciHttpHandlerOptions, value: number): void {
    // The SDK hands every handler its logger and its default socket timeout under symbol keys: this handler
    // logs nothing, and its request timeout is the one configured.
    if (typeof key === 'symbol') return;
    // The agent is built from the options once; a later change would not reach its pools.
    throw new TypeError(`UndiciHttpHandler: ${key} is fixed at construction (asked for ${value})`);
  }

  httpHandlerConfigs(): UndiciHttpHandlerOptions {
    return { ...this.#config };
  }

  destroy(): void {
    const agent = this.#agent;
    this.#agent = undefined;
    agent?.destroy().catch(() => {
      // Destroying fails only if it was destroyed already; either way no connection is left open.
    });
  }
}
