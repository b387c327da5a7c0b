import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
  SQSClient,
  type SQSClientConfig,
} from '@aws-sdk/client-sqs';
import { DynamoRateBudget } from '../../semaphore/dynamo-rate-budget.js';
import { InvalidLocalOptionError } from '../errors.js';
import { clientConfigFor, type LocalAwsEndpoints } from './local-aws.js';

/** SDK client settings per service; `LocalAws.clientConfig` is one. */
export interface ProvisionClientConfig {
  s3: S3ClientConfig;
  sqs: SQSClientConfig;
  dynamodb: DynamoDBClientConfig;
}

export interface ProvisionLocalOptions {
  /** Client settings per service (e.g. `LocalAws.clientConfig`); wins over `endpoints`. */
  clientConfig?: ProvisionClientConfig;
  /** Endpoints to provision, with the emulators' region and test credentials. One of the two is required. */
  endpoints?: LocalAwsEndpoints;
  /** Default `s3-ingest-local`. */
  bucket?: string;
  /** Default `s3-ingest-local-ingest`. */
  queueName?: string;
  /** Default `<queueName>-dlq`. */
  dlqName?: string;
  /** Default `s3-ingest-local-semaphore`. */
  tableName?: string;
  /** Receives before a message moves to the DLQ. Default 5. */
  maxReceiveCount?: number;
  /** The ingest queue's visibility timeout. Default 30 s. */
  visibilityTimeoutSeconds?: number;
  /**
   * FIFO ingest queue and DLQ (names get `.fifo`; deduplication by the producer's id only, as the stack).
   * Default false.
   */
  fifo?: boolean;
}

export interface LocalResources {
  bucket: string;
  queueUrl: string;
  dlqUrl: string;
  dlqArn: string;
  tableName: string;
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`GetQueueAttributes returned no QueueArn for ${queueUrl}`);
  return arn;
}

async function ensureBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
    // Exists: make sure it is ours to use (HeadBucket fails if it is someone else's).
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  }
}

/**
 * Creates what the deployed stack has: the bucket, the ingest queue and its DLQ with a redrive policy, and
 * the semaphore table (pk/sk strings, on-demand). Idempotent: running it again converges the same resources
 * (queue attributes are re-applied).
 */
export async function provisionLocal(options: ProvisionLocalOptions): Promise<LocalResources> {
  const config =
    options.clientConfig ??
    (options.endpoints === undefined ? undefined : clientConfigFor(options.endpoints));
  if (config === undefined)
    throw new InvalidLocalOptionError('clientConfig', 'pass clientConfig or endpoints');
  const bucket = options.bucket ?? 's3-ingest-local';
  const fifo = options.fifo ?? false;
  const suffix = fifo ? '.fifo' : '';
  const queueName = `${options.queueName ?? 's3-ingest-local-ingest'}${suffix}`;
  const dlqName =
    options.dlqName === undefined
      ? `${queueName.replace(/\.fifo$/, '')}-dlq${suffix}`
      : `${options.dlqName}${suffix}`;
  // FifoQueue can only be set when a queue is created.
  const created = fifo ? { Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'false' } } : {};
  const tableName = options.tableName ?? 's3-ingest-local-semaphore';
  const maxReceiveCount = options.maxReceiveCount ?? 5;
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 30;
  if (!Number.isInteger(maxReceiveCount) || maxReceiveCount < 1 || maxReceiveCount > 1000) {
    throw new InvalidLocalOptionError(
      'maxReceiveCount',
      `must be an integer in [1, 1000], got ${maxReceiveCount}`,
    );
  }
  if (
    !Number.isInteger(visibilityTimeoutSeconds) ||
    visibilityTimeoutSeconds < 0 ||
    visibilityTimeoutSeconds > 43_200
  ) {
    throw new InvalidLocalOptionError(
      'visibilityTimeoutSeconds',
      `must be an integer in [0, 43200], got ${visibilityTimeoutSeconds}`,
    );
  }

  const s3 = new S3Client(config.s3);
  const sqs = new SQSClient(config.sqs);
  const dynamodb = new DynamoDBClient(config.dynamodb);
  try {
    const queues = (async () => {
      const { QueueUrl: dlqUrl } = await sqs.send(new CreateQueueCommand({ QueueName: dlqName, ...created }));
      if (dlqUrl === undefined) throw new Error(`CreateQueue returned no QueueUrl for ${dlqName}`);
      const dlqArn = await queueArn(sqs, dlqUrl);
      // Create bare, then set attributes: CreateQueue with attributes differing from an existing queue's fails.
      const { QueueUrl: queueUrl } = await sqs.send(
        new CreateQueueCommand({ QueueName: queueName, ...created }),
      );
      if (queueUrl === undefined) throw new Error(`CreateQueue returned no QueueUrl for ${queueName}`);
      await sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: queueUrl,
          Attributes: {
            VisibilityTimeout: String(visibilityTimeoutSeconds),
            RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount }),
          },
        }),
      );
      return { queueUrl, dlqUrl, dlqArn };
    })();
    const [, { queueUrl, dlqUrl, dlqArn }] = await Promise.all([
      ensureBucket(s3, bucket),
      queues,
      // The same table shape the budgets and the CDK stack use, created idempotently.
      DynamoRateBudget.createTable(dynamodb, tableName),
    ]);
    return { bucket, queueUrl, dlqUrl, dlqArn, tableName };
  } finally {
    s3.destroy();
    sqs.destroy();
    dynamodb.destroy();
  }
}
