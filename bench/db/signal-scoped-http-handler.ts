import { NodeHttpHandler } from '@smithy/node-http-handler';
import { currentRequestSignal, SIGNAL_SCOPED } from '../../lib/db/request-signal.js';

type HandleArgs = Parameters<NodeHttpHandler['handle']>;

/**
 * bench:db's steps before undici: the SDK's `NodeHttpHandler` taking the abort signal of a request from the
 * async context of the call (`withRequestSignal`) when the SDK passes none, as `UndiciHttpHandler` does, so
 * `S3ObjectStore` sends without per-call options and the client keeps its cached middleware stack.
 */
export class SignalScopedHttpHandler extends NodeHttpHandler {
  readonly [SIGNAL_SCOPED] = true;

  override handle(
    request: HandleArgs[0],
    options: HandleArgs[1] = {},
  ): ReturnType<NodeHttpHandler['handle']> {
    const signal = options.abortSignal ?? currentRequestSignal();
    return super.handle(request, signal === undefined ? options : { ...options, abortSignal: signal });
  }
}
