import { S3Client } from '@aws-sdk/client-s3';
import { keepConfigCompact } from './s3-client-config-shape.js';
import { dropUnusedPerCallMiddlewares, reuseRequestSigner } from './s3-client-trims.js';
import { KeyCachingSha256 } from './sha256-key-cache.js';
import { UndiciHttpHandler } from './undici-http-handler.js';

export interface CreateS3ClientOptions {
  /**
   * AWS region.
   * @default the SDK's resolution (`AWS_REGION`, profile); `us-east-1` when an endpoint is given and none is found
   * @example { region: 'eu-west-1' }
   */
  region?: string;
  /**
   * Endpoint override for S3-compatible servers (emulators, LocalStack, MinIO). Enables path-style.
   * @default undefined (AWS)
   * @example { endpoint: 'http://127.0.0.1:4566' }
   */
  endpoint?: string;
  /**
   * Static credentials.
   * @default the SDK's credential chain
   * @example { credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /**
   * Path-style addressing (`host/bucket/key`).
   * @default true when `endpoint` is given, else false
   * @example { forcePathStyle: true }
   */
  forcePathStyle?: boolean;
  /**
   * Keep-alive connections per origin. Must be >= the concurrency of every pool sharing the client, or
   * requests queue invisibly inside the HTTP client.
   * @default 100
   * @example { maxSockets: 256 }
   */
  maxSockets?: number;
  /**
   * Milliseconds to establish a connection.
   * @default 3000
   * @example { connectionTimeout: 1000 }
   */
  connectionTimeout?: number;
  /**
   * Milliseconds of silence allowed while waiting for a response's headers, then between chunks of its body.
   * 0: none, the pool's per-task timeout aborts stalled requests through the signal, which destroys the
   * connection.
   * @default 0
   * @example { requestTimeout: 5000 }
   */
  requestTimeout?: number;
}

/**
 * The one factory for S3 clients used behind an ExecutorPool: `maxAttempts: 1` (the pool owns retries,
 * so a throttled write is not retried 3x in the SDK and again by the pool), undici keep-alive connection
 * pools sized to the pool (`UndiciHttpHandler`), path-style when an endpoint is overridden, and a cached
 * middleware stack with abort signals taken from the call's async context, checksums only where S3 requires them,
 * without the per-call middlewares it does not use, with one request signer (and its last signing key)
 * reused (`s3-client-trims.ts`), HMAC keys kept as key objects (`sha256-key-cache.ts`) and its config laid out
 * for the SDK's per-call copies of it (`s3-client-config-shape.ts`): well under 0.6x
 * the CPU per write of per-call `{ abortSignal }` on the SDK's default stack (bench:db, lib/db/README.md),
 * with the same cancellation and error shapes. Create one per process/container and share it.
 */
export function createS3Client(options: CreateS3ClientOptions = {}): S3Client {
  const maxSockets = options.maxSockets ?? 100;
  const region = options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  const client = new S3Client({
    maxAttempts: 1,
    // No CRC32 of every PUT body and no response-checksum plumbing: S3 requires neither for the calls
    // `S3ObjectStore` makes (the SDK's default since 3.729 is WHEN_SUPPORTED). Bodies stay covered by the
    // SigV4 payload hash (`x-amz-content-sha256`), which S3 verifies.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Resolve each command's middleware stack once, not per call: `S3ObjectStore` sends without per-call
    // options and the abort signal reaches the handler through the async context instead.
    cacheMiddleware: true,
    // The SDK's hash, with HMAC keys kept as key objects: SigV4's two HMACs per request cost ~40 us less.
    sha256: KeyCachingSha256,
    ...(region !== undefined ? { region } : options.endpoint !== undefined ? { region: 'us-east-1' } : {}),
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    // The handler owns the defaults of both timeouts (the same as documented above).
    requestHandler: new UndiciHttpHandler({
      maxSockets,
      connectionTimeout: options.connectionTimeout,
      requestTimeout: options.requestTimeout,
    }),
  });
  dropUnusedPerCallMiddlewares(client);
  reuseRequestSigner(client);
  keepConfigCompact(client.config);
  return client;
}
