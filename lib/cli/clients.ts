import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import type { CliIo } from './io.js';

interface CommonConfig {
  region?: string;
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

// The SDK reads these from process.env on its own; commands take them from `io.env` instead so that
// in-process callers (tests) can point a command somewhere without touching the process environment.
function common(env: CliIo['env'], service: 'S3' | 'SQS'): CommonConfig {
  const config: CommonConfig = {};
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  if (region) config.region = region;
  const ignore = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true';
  const endpoint = ignore ? undefined : (env[`AWS_ENDPOINT_URL_${service}`] ?? env.AWS_ENDPOINT_URL);
  if (endpoint) config.endpoint = endpoint;
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
    config.credentials = {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
  }
  return config;
}

/** An SQS client from the SDK's conventions (default credential chain, `AWS_ENDPOINT_URL[_SQS]`). */
export function sqsClientFromEnv(env: CliIo['env']): SQSClient {
  return new SQSClient(common(env, 'SQS') satisfies SQSClientConfig);
}

/**
 * An S3 client likewise; path-style when an endpoint override is set (emulators, S3-compatible stores).
 * Loaded on use: `send` and `dlq` share this file and must run in a producer project, which has the SQS
 * client only (`@aws-sdk/client-s3` is an optional peer).
 */
export async function s3ClientFromEnv(env: CliIo['env']): Promise<S3Client> {
  const { S3Client } = await import('@aws-sdk/client-s3');
  const config: S3ClientConfig = common(env, 'S3');
  if (config.endpoint !== undefined) config.forcePathStyle = true;
  return new S3Client(config);
}
