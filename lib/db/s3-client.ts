import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';

export interface CreateS3ClientOptions {
  /** Default: the SDK's resolution (`AWS_REGION`, profile); `us-east-1` when an endpoint is given and none is found. */
  region?: string;
  /** Endpoint override for S3-compatible servers (emulators, LocalStack, MinIO). Enables path-style. */
  endpoint?: string;
  /** Default: the SDK's credential chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Default: `true` when `endpoint` is given, else `false`. */
  forcePathStyle?: boolean;
  /**
   * Sockets per host in the keep-alive agents. Must be >= the concurrency of every pool sharing the
   * client, or requests queue invisibly inside the SDK. Default 100.
   */
  maxSockets?: number;
  /** Milliseconds to establish a connection. Default 3000. */
  connectionTimeout?: number;
  /**
   * Socket idle timeout in ms (the handler's `requestTimeout`). Default 0 (none): the pool's per-task
   * timeout aborts stalled requests through the signal, which destroys the socket.
   */
  requestTimeout?: number;
}

/**
 * The one factory for S3 clients used behind an ExecutorPool: `maxAttempts: 1` (the pool owns retries,
 * so a throttled write is not retried 3x in the SDK and again by the pool), keep-alive agents sized to
 * the pool, path-style when an endpoint is overridden. Create one per process/container and share it.
 */
export function createS3Client(options: CreateS3ClientOptions = {}): S3Client {
  const maxSockets = options.maxSockets ?? 100;
  const region = options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  return new S3Client({
    maxAttempts: 1,
    ...(region !== undefined ? { region } : options.endpoint !== undefined ? { region: 'us-east-1' } : {}),
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    requestHandler: new NodeHttpHandler({
      // Options, not Agent instances: the handler then owns the agents and `client.destroy()` closes them.
      httpAgent: { keepAlive: true, maxSockets },
      httpsAgent: { keepAlive: true, maxSockets },
      connectionTimeout: options.connectionTimeout ?? 3000,
      requestTimeout: options.requestTimeout ?? 0,
    }),
  });
}
