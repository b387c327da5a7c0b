import { AsyncLocalStorage } from 'node:async_hooks';
import { NodeHttpHandler } from '@smithy/node-http-handler';

type HandleArgs = Parameters<NodeHttpHandler['handle']>;

// Why not `client.send(command, { abortSignal })`: any per-call options make the SDK rebuild the
// command's middleware stack on every call (smithy's `Client.send` caches the resolved handler only when
// called without options and `cacheMiddleware: true`), which costs ~300 us CPU per S3 request. The signal
// travels beside the call instead, in the async context, and reaches the HTTP handler, which still
// destroys the request and its socket when it aborts.

const requestSignal = new AsyncLocalStorage<AbortSignal>();

/** Runs `send` with `signal` as the abort signal of the SDK requests it makes (see `SignalScopedHttpHandler`). */
export function withRequestSignal<T>(signal: AbortSignal, send: () => Promise<T>): Promise<T> {
  return requestSignal.run(signal, send);
}

/**
 * `NodeHttpHandler` that takes the abort signal of a request from the async context of the call
 * (`withRequestSignal`) when the SDK passes none, so requests stay cancellable while the client keeps its
 * cached middleware stack. An abort destroys the request and its socket, as with a per-call `abortSignal`.
 */
export class SignalScopedHttpHandler extends NodeHttpHandler {
  override handle(
    request: HandleArgs[0],
    options: HandleArgs[1] = {},
  ): ReturnType<NodeHttpHandler['handle']> {
    const signal = options.abortSignal ?? requestSignal.getStore();
    return super.handle(request, signal === undefined ? options : { ...options, abortSignal: signal });
  }
}
