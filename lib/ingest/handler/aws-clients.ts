import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createS3Client } from '../../db/s3-client.js';
import type { IngestConfig } from '../config.js';

/** The clients one container shares across invocations and tenants (created once, at cold start). */
export interface AwsClients {
  readonly s3: S3Client;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
}

/**
 * Builds the container's clients from the config, keeping any that were injected. The S3 client is the
 * pool-backed one (`maxAttempts: 1`, the pools own retries) with one keep-alive socket per slot of the
 * invocation's budget, so requests never queue invisibly inside the SDK.
 */
export function createAwsClients(config: IngestConfig, provided: Partial<AwsClients> = {}): AwsClients {
  const region = config.region ?? (Object.values(config.endpoints).some(Boolean) ? 'us-east-1' : undefined);
  const common = region === undefined ? {} : { region };
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
      new SQSClient({
        ...common,
        ...(config.endpoints.sqs === undefined ? {} : { endpoint: config.endpoints.sqs }),
      }),
    dynamodb:
      provided.dynamodb ??
      new DynamoDBClient({
        ...common,
        ...(config.endpoints.dynamodb === undefined ? {} : { endpoint: config.endpoints.dynamodb }),
      }),
  };
}
