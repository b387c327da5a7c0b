import { SQSClient } from '@aws-sdk/client-sqs';
import { withRequestSignal } from '../../db/request-signal.js';
import { keepConfigCompact } from '../../db/s3-client-config-shape.js';
import { KeyCachingSha256 } from '../../db/sha256-key-cache.js';
import { UndiciHttpHandler } from '../../db/undici-http-handler.js';
import type { LocalServiceClientConfig } from '../emulators/local-aws.js';

/**
 * Client-level middlewares of the SQS client that do nothing the local pipeline needs, on every call:
 * - `getUserAgentMiddleware`: builds and escapes the `user-agent` string; the emulator ignores it.
 * - `recursionDetectionMiddleware`: copies Lambda's `_X_AMZN_TRACE_ID` into a header; nothing here reads it.
 * - `loggerMiddleware`: logs to the client's logger, which is a no-op here.
 */
export const LOCAL_SQS_UNUSED_MIDDLEWARES = [
  'getUserAgentMiddleware',
  'recursionDetectionMiddleware',
  'loggerMiddleware',
] as const;

/**
 * The SQS client of the local pipeline (the producer's sends, the event-source runner's receives and
 * deletes), on the SDK's real client with its per-call work cut to what a loopback emulator needs:
 * - `md5: false`: no MD5 of every message body sent and received. The SDK compares it with the MD5 the
 *   queue answers, which guards a network path; here both ends share the loopback, and Lambda's event
 *   source hands the function what the queue returned without such a check. The demo's read-back compares
 *   the DLQ's bodies themselves.
 * - the middleware stack resolved once per command (`cacheMiddleware`), also for calls whose only option is
 *   an abort signal (`sendAbortSignalsAside`);
 * - `LOCAL_SQS_UNUSED_MIDDLEWARES` removed, HMAC keys kept as key objects (`KeyCachingSha256`) and the
 *   config laid out for the SDK's per-call copies (`keepConfigCompact`), as `createS3Client` does;
 * - undici's HTTP client (`UndiciHttpHandler`), as `createS3Client` has.
 *
 * Retries stay the SDK's. Send, receive and delete of 5,000 messages through the embedded stack, client and
 * emulator in one process: about 0.7x the CPU of `new SQSClient(config)` (docs/cpu.md).
 * A middleware of the list that the SDK no longer has is reported with a process warning
 * (`LocalSqsClientWarning`) and the client is built without that trim.
 */
export function createLocalSqsClient(config: LocalServiceClientConfig): SQSClient {
  const client = new SQSClient({
    ...config,
    md5: false,
    cacheMiddleware: true,
    sha256: KeyCachingSha256,
    requestHandler: new UndiciHttpHandler(),
  });
  removeMiddlewares(client, LOCAL_SQS_UNUSED_MIDDLEWARES);
  keepConfigCompact(client.config);
  sendAbortSignalsAside(client);
  return client;
}

type Send = (command: unknown, optionsOrCallback?: unknown, callback?: unknown) => unknown;

/**
 * Makes `client.send(command, { abortSignal })` keep the command's cached middleware stack: the SDK resolves
 * the stack again for any call with options, and drops its cache (smithy's `Client.send`), which the producer
 * (`SendMessageBatch`) and the event-source runner (`ReceiveMessage`) do on every call. A call whose only
 * option is `abortSignal` is sent without options, the signal beside it in the async context, where the
 * client's `UndiciHttpHandler` takes it (as `createS3Client` does): an abort still destroys the
 * request in flight; only a wait between two SDK retries is no longer cut short. Calls with other options
 * or a callback go through unchanged.
 */
function sendAbortSignalsAside(client: SQSClient): void {
  const send = client.send.bind(client) as Send;
  const aside: Send = (command, optionsOrCallback, callback) => {
    if (callback === undefined && isSignalOnly(optionsOrCallback)) {
      const signal = optionsOrCallback.abortSignal;
      return signal === undefined
        ? send(command)
        : withRequestSignal(signal, () => send(command) as Promise<unknown>);
    }
    return send(command, optionsOrCallback, callback);
  };
  (client as unknown as { send: Send }).send = aside;
}

function isSignalOnly(options: unknown): options is { abortSignal?: AbortSignal } {
  if (typeof options !== 'object' || options === null) return false;
  for (const key in options) if (key !== 'abortSignal') return false;
  return true;
}

/**
 * Removes the named middlewares from `client`'s stack; one it does not have (another SDK version) is
 * reported with a process warning (`LocalSqsClientWarning`), so a trim that no longer applies is seen.
 */
export function removeMiddlewares(
  client: { readonly middlewareStack: { remove(name: string): boolean } },
  names: readonly string[],
): void {
  for (const name of names) {
    if (!client.middlewareStack.remove(name))
      process.emitWarning(`the SQS client has no middleware ${name}: it stays in place`, {
        type: 'LocalSqsClientWarning',
      });
  }
}
