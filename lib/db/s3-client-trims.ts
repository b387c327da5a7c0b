import type { S3Client } from '@aws-sdk/client-s3';

// Per-call CPU the SDK's S3 client spends on things `S3ObjectStore` does not use, trimmed by
// `createS3Client`. Each trim keeps the request on the wire and the errors the product sees unchanged
// (pinned by `test/unit/db/s3-client-lean-stack.test.ts`); bench:db measures each one as a step.

/**
 * Client-level middlewares that run on every call but do nothing `S3ObjectStore` needs:
 * - `retryMiddleware`: with `maxAttempts: 1` it never retries (the pool does), yet per call it acquires a
 *   retry token and generates a UUID for the `amz-sdk-invocation-id` header. Error shapes do not depend on
 *   it (`name`, `$metadata.httpStatusCode` come from the deserializer); only `$metadata.attempts` goes.
 * - `getUserAgentMiddleware`: builds and escapes the `user-agent` string per call; S3 ignores it.
 * - `recursionDetectionMiddleware`: copies Lambda's `_X_AMZN_TRACE_ID` into `X-Amzn-Trace-Id`. S3 uses it
 *   only to carry an X-Ray trace on to its event notifications, which this product does not consume.
 * - `loggerMiddleware`: logs to the client's logger, which is a no-op here.
 * - `regionRedirectMiddleware`: an `await` and a re-throw per call unless `followRegionRedirects` is set,
 *   which `createS3Client` never does (the bucket's region is configured, not discovered).
 */
export const UNUSED_PER_CALL_MIDDLEWARES = [
  'retryMiddleware',
  'getUserAgentMiddleware',
  'recursionDetectionMiddleware',
  'loggerMiddleware',
  'regionRedirectMiddleware',
] as const;

/** Removes `UNUSED_PER_CALL_MIDDLEWARES` from `client`'s middleware stack. */
export function dropUnusedPerCallMiddlewares(client: S3Client): void {
  for (const name of UNUSED_PER_CALL_MIDDLEWARES) {
    if (name === 'retryMiddleware') {
      // The signing middleware is placed relative to it: replaced by a pass-through, not removed.
      client.middlewareStack.add((next) => next, {
        name,
        step: 'finalizeRequest',
        priority: 'high',
        tags: ['RETRY'],
        override: true,
      });
    } else client.middlewareStack.remove(name);
  }
}

/**
 * Makes `client` build its SigV4 signer once instead of on every request. The SDK's `config.signer`
 * constructs a new `SignatureV4MultiRegion` per call, spreading the whole resolved client config into its
 * options; its region and service come from `config.signingRegion`/`signingName`, which the SDK fixes on
 * the first call, so every instance after the first is equal to it. Per-request signing inputs (the
 * endpoint's signing region and name, the credentials) are still passed on each `sign` call. A failed
 * construction is not kept: the next call tries again.
 */
export function reuseRequestSigner(client: S3Client): void {
  const config = client.config;
  const build = config.signer;
  let signer: ReturnType<typeof build> | undefined;
  config.signer = (authScheme) => {
    signer ??= build(authScheme).catch((err: unknown) => {
      signer = undefined;
      throw err;
    });
    return signer;
  };
}
