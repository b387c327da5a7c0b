import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { buildApp } from 'fauxqs';
import { InvalidLocalOptionError } from '../errors.js';
import { startChaosProxy } from '../s3-behaviour/chaos-proxy.js';
import type { S3BehaviourModel, S3BehaviourOptions } from '../s3-behaviour/s3-behaviour-model.js';
import { stampDeadLetterSources } from './dead-letter-source.js';
import { createFauxqsStores } from './fauxqs-stores.js';
import { enforceConditionalWrites } from './s3-conditional-writes.js';
import { serveDeleteObjects } from './s3-delete-objects.js';
import { serveS3Listing } from './s3-listing.js';
import { keepS3ObjectTags } from './s3-object-tags.js';
import { serveResolvableQueueUrls } from './sqs-queue-urls.js';

/** Endpoint per service, as SDK v3 clients take it. */
export interface LocalAwsEndpoints {
  s3: string;
  sqs: string;
  dynamodb: string;
}

/** Settings an SDK v3 client can spread: `new S3Client(aws.clientConfig.s3)`. */
export interface LocalServiceClientConfig {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Set on the S3 entry: emulators (and endpoint overrides in general) need path-style addressing. */
  forcePathStyle?: boolean;
}

export interface LocalAwsClientConfig {
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  s3: LocalServiceClientConfig & { forcePathStyle: true };
  sqs: LocalServiceClientConfig;
  dynamodb: LocalServiceClientConfig;
}

export interface LocalAws {
  /** What clients should use. With `chaos`, `s3` is the chaos proxy in front of the emulator. */
  endpoints: LocalAwsEndpoints;
  /** The emulators themselves (no chaos proxy): for provisioning and for checking what really landed. */
  emulatorEndpoints: LocalAwsEndpoints;
  clientConfig: LocalAwsClientConfig;
  /** Present when started with `chaos`: the proxy's model (counters, live rates) and endpoint. */
  chaos?: { model: S3BehaviourModel; endpoint: string };
  /** Frees every port, socket and timer of the stack. Idempotent. */
  stop(): Promise<void>;
}

export interface StartLocalAwsOptions {
  /**
   * First port on 127.0.0.1: fauxqs (SQS + S3) takes `port`, dynalite (DynamoDB) `port + 1`, the chaos proxy
   * `port + 2`. Default 0: every server takes any free port, so stacks can run side by side.
   */
  port?: number;
  /** Puts a chaos proxy applying this S3 behaviour in front of the S3 emulator. Default: none. */
  chaos?: S3BehaviourOptions;
}

/** Region and credentials the emulators accept (they check neither). */
export const LOCAL_REGION = 'us-east-1';
export const LOCAL_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' } as const;

/** Builds spreadable per-service client settings (path-style for S3) for a set of endpoints. */
export function clientConfigFor(
  endpoints: LocalAwsEndpoints,
  region: string = LOCAL_REGION,
  credentials: { accessKeyId: string; secretAccessKey: string } = { ...LOCAL_CREDENTIALS },
): LocalAwsClientConfig {
  return {
    region,
    credentials,
    s3: { endpoint: endpoints.s3, region, credentials, forcePathStyle: true },
    sqs: { endpoint: endpoints.sqs, region, credentials },
    dynamodb: { endpoint: endpoints.dynamodb, region, credentials },
  };
}

async function listen(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

async function closeServer(server: Server): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    // Keep-alive sockets of SDK clients would otherwise hold close() open.
    server.closeAllConnections();
  });
}

/**
 * Starts, in this process, fauxqs (SQS + S3) and dynalite (DynamoDB) on 127.0.0.1, and optionally a chaos
 * proxy in front of S3. About 50 ms; nothing is provisioned (see `provisionLocal`).
 */
export async function startLocalAws(options: StartLocalAwsOptions = {}): Promise<LocalAws> {
  const basePort = options.port ?? 0;
  if (!Number.isInteger(basePort) || basePort < 0 || basePort > 65_533) {
    throw new InvalidLocalOptionError('port', `must be an integer in [0, 65533], got ${basePort}`);
  }
  const portFor = (offset: number) => (basePort === 0 ? 0 : basePort + offset);
  const cleanups: Array<() => Promise<void>> = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    // Reverse start order: the proxy goes before the emulator it forwards to.
    stopping ??= (async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
      // Close callbacks run before libuv releases the handles; let it, so callers see a clean process.
      await new Promise((resolve) => setImmediate(resolve));
    })();
    return stopping;
  };

  try {
    // buildApp + our own listen (rather than startFauxqs) binds loopback only; startFauxqs binds 0.0.0.0.
    const { stores, s3 } = await createFauxqsStores();
    const fauxqs = buildApp({ logger: false, stores });
    stampDeadLetterSources(fauxqs);
    // Where fauxqs departs from S3 in ways the product depends on, the embedded S3 answers as S3 does, inside
    // the emulator's own app, so no client or proxy can reach S3 behaviour that AWS would not have:
    // conditional writes (fauxqs ignores them), listing order, object tags (fauxqs keeps none), the keys
    // DeleteObjects deletes (fauxqs misreads some).
    keepS3ObjectTags(fauxqs, s3);
    enforceConditionalWrites(fauxqs, s3);
    serveDeleteObjects(fauxqs, s3);
    serveS3Listing(fauxqs, s3);
    serveResolvableQueueUrls(fauxqs);
    cleanups.push(() => fauxqs.close());
    await fauxqs.listen({ port: portFor(0), host: '127.0.0.1' });
    const fauxqsPort = (fauxqs.server.address() as AddressInfo).port;

    const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    cleanups.push(() => closeServer(dynamo));
    const dynamoPort = await listen(dynamo, portFor(1));

    const emulatorEndpoints: LocalAwsEndpoints = {
      s3: `http://127.0.0.1:${fauxqsPort}`,
      sqs: `http://127.0.0.1:${fauxqsPort}`,
      dynamodb: `http://127.0.0.1:${dynamoPort}`,
    };
    let chaos: LocalAws['chaos'];
    if (options.chaos !== undefined) {
      const proxy = await startChaosProxy({
        target: emulatorEndpoints.s3,
        model: options.chaos,
        port: portFor(2),
      });
      cleanups.push(() => proxy.stop());
      chaos = { model: proxy.model, endpoint: proxy.endpoint };
    }
    const endpoints: LocalAwsEndpoints = {
      ...emulatorEndpoints,
      s3: chaos?.endpoint ?? emulatorEndpoints.s3,
    };
    return {
      endpoints,
      emulatorEndpoints,
      clientConfig: clientConfigFor(endpoints),
      ...(chaos === undefined ? {} : { chaos }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
