import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createS3Client } from '../../db/s3-client.js';
import { keepConfigCompact } from '../../db/s3-client-config-shape.js';
import type { IngestConfig } from '../config.js';

/** The clients one container shares across invocations and tenants (created once, at cold start). */
export interface AwsClients {
  readonly s3: S3Client;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
}

/**
 * Per-request bounds of the SQS and DynamoDB clients. Every call the handler makes also carries the
 * invocation's abort signal; these bound each request on their own, so a service that accepts a request
 * and never answers fails it in time even for a call whose signal is far off, and the SDK's retry (within
 * the signal) gets a fresh connection.
 * @example { requestTimeoutMs: 1_000, connectionTimeoutMs: 500 }
 */
export interface AwsRequestTimeouts {
  /**
   * Milliseconds a request may take, from sending to its whole response, before it fails with
   * `TimeoutError` (`throwOnRequestTimeout`). DynamoDB and SQS answer in milliseconds; 2 s is far above that and well under a
   * Lambda's `DEADLINE_MARGIN_MS` default (5 s).
   * @default 2000
   */
  readonly requestTimeoutMs?: number;
  /**
   * Milliseconds to establish a connection.
   * @default 1000
   */
  readonly connectionTimeoutMs?: number;
  /**
   * Attempts per call, the SDK's retries included (each bounded by `requestTimeoutMs`, all by the signal).
   * @default the SDK's (3)
   */
  readonly maxAttempts?: number;
}

/** The defaults of `AwsRequestTimeouts`, ms. */
export const DEFAULT_AWS_TIMEOUTS = {
  /** One attempt's whole request, answer included. */
  requestTimeoutMs: 2_000,
  /** Opening a connection. */
  connectionTimeoutMs: 1_000,
} as const;

/**
 * Builds the container's clients from the config, keeping any that were injected. The S3 client is the
 * pool-backed one (`maxAttempts: 1`, the pools own retries and per-attempt timeouts) with one keep-alive
 * socket per slot of the invocation's budget, so requests never queue invisibly inside the SDK. SQS and
 * DynamoDB get a request and a connection timeout (`timeouts`). Every client built here has its config laid
 * out for the SDK's per-call copies of it (`keepConfigCompact`).
 */
export function createAwsClients(
  config: IngestConfig,
  provided: Partial<AwsClients> = {},
  timeouts: AwsRequestTimeouts = {},
): AwsClients {
  const region = config.region ?? (Object.values(config.endpoints).some(Boolean) ? 'us-east-1' : undefined);
  const common = region === undefined ? {} : { region };
  // One handler per client: `client.destroy()` closes its own sockets.
  const bounded = () => ({
    requestHandler: new NodeHttpHandler({
      requestTimeout: timeouts.requestTimeoutMs ?? DEFAULT_AWS_TIMEOUTS.requestTimeoutMs,
      connectionTimeout: timeouts.connectionTimeoutMs ?? DEFAULT_AWS_TIMEOUTS.connectionTimeoutMs,
      // Without it this smithy version only logs a warning when requestTimeout passes.
      throwOnRequestTimeout: true,
    }),
    ...(timeouts.maxAttempts === undefined ? {} : { maxAttempts: timeouts.maxAttempts }),
  });
  const compact = <C extends { readonly config: object }>(client: C): C => {
    keepConfigCompact(client.config);
    return client;
  };
  return {
    s3:
      provided.s3 ??
      createS3Client({
        ...common,
        ...(config.endpoints.s3 === undefined ? {} : { endpoint: config.endpoints.s3 }),
        forcePathStyle: config.s3ForcePathStyle,
        maxSockets: config.poolConcurrency,
      }),
    sqs:
      provided.sqs ??
      compact(
        new SQSClient({
          ...common,
          ...(config.endpoints.sqs === undefined ? {} : { endpoint: config.endpoints.sqs }),
          ...bounded(),
        }),
      ),
    dynamodb:
      provided.dynamodb ??
      compact(
        new DynamoDBClient({
          ...common,
          ...(config.endpoints.dynamodb === undefined ? {} : { endpoint: config.endpoints.dynamodb }),
          ...bounded(),
        }),
      ),
  };
}
