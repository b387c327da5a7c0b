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
 * construction is not kept: the next call tries again. With `reuseKey` (the default) the signer also keeps
 * its last signing key (`reuseSigningKey`).
 */
export function reuseRequestSigner(client: S3Client, { reuseKey = true }: { reuseKey?: boolean } = {}): void {
  const config = client.config;
  const build = config.signer;
  let signer: ReturnType<typeof build> | undefined;
  config.signer = (authScheme) => {
    signer ??= build(authScheme).then(
      (built) => {
        if (reuseKey) reuseSigningKey(built);
        return built;
      },
      (err: unknown) => {
        signer = undefined;
        throw err;
      },
    );
    return signer;
  };
}

/** The part of the SigV4 credentials `getSigningKey` derives from. */
interface SigningCredentials {
  readonly secretAccessKey: string;
}

type GetSigningKey = (
  credentials: SigningCredentials,
  region?: string,
  shortDate?: string,
  service?: string,
) => Promise<Uint8Array>;

/**
 * The last signing key derived, and everything it was derived from: SigV4's signing key is an HMAC chain
 * over the secret key, the date, the region and the service (neither the key id nor a session token enter it).
 */
interface KeptSigningKey {
  readonly secretAccessKey: string;
  readonly region: string | undefined;
  readonly shortDate: string | undefined;
  readonly service: string | undefined;
  readonly key: Promise<Uint8Array>;
}

/**
 * Makes a SigV4 signer (the SDK's `SignatureV4MultiRegion`, or a `SignatureV4`) hand out its last signing
 * key again while the secret key, date, region and service are the same. The SDK looks its signing-key
 * cache up by an HMAC of the secret key over the access key id, computed on every request (~10 us);
 * comparing the inputs costs a few string comparisons. A different input (a new day, a refreshed
 * secret, another region) derives the key the SDK's way; a failed derivation is not kept. A signer of
 * another shape is left as it is.
 */
export function reuseSigningKey(signer: unknown): void {
  const inner = ((signer as { sigv4Signer?: unknown } | undefined)?.sigv4Signer ?? signer) as
    | { getSigningKey?: GetSigningKey }
    | undefined;
  const derive = inner?.getSigningKey;
  if (inner === undefined || typeof derive !== 'function') return;
  let kept: KeptSigningKey | undefined;
  inner.getSigningKey = function getSigningKey(credentials, region, shortDate, service) {
    const last = kept;
    if (
      last !== undefined &&
      last.shortDate === shortDate &&
      last.secretAccessKey === credentials.secretAccessKey &&
      last.region === region &&
      last.service === service
    ) {
      return last.key;
    }
    const key = derive.call(this, credentials, region, shortDate, service);
    const entry: KeptSigningKey = {
      secretAccessKey: credentials.secretAccessKey,
      region,
      shortDate,
      service,
      key,
    };
    kept = entry;
    key.catch(() => {
      if (kept === entry) kept = undefined;
    });
    return key;
  };
}
