import { AsyncLocalStorage } from 'node:async_hooks';

// Why not `client.send(command, { abortSignal })`: any per-call options make the SDK rebuild the
// command's middleware stack on every call (smithy's `Client.send` caches the resolved handler only when
// called without options and `cacheMiddleware: true`), which costs ~300 us CPU per S3 request. The signal
// travels beside the call instead, in the async context, and reaches the HTTP handler
// (`UndiciHttpHandler`), which still destroys the request and its connection when it aborts.

const requestSignal = new AsyncLocalStorage<AbortSignal>();

/**
 * Brand of an SDK request handler that takes its abort signal from the async context (`withRequestSignal`),
 * so a caller can leave the SDK's per-call options out.
 */
export const SIGNAL_SCOPED: unique symbol = Symbol.for('s3-ingest.signalScopedHttpHandler');

/** Whether `handler` takes the abort signal of a request from the async context (it carries `SIGNAL_SCOPED`). */
export function isSignalScoped(handler: unknown): boolean {
  return typeof handler === 'object' && handler !== null && SIGNAL_SCOPED in handler;
}

/** The signal `withRequestSignal` set for the current call, if any. */
export function currentRequestSignal(): AbortSignal | undefined {
  return requestSignal.getStore();
}

/** Runs `send` with `signal` as the abort signal of the SDK requests it makes (see `UndiciHttpHandler`). */
export function withRequestSignal<T>(signal: AbortSignal, send: () => Promise<T>): Promise<T> {
  return requestSignal.run(signal, send);
}
