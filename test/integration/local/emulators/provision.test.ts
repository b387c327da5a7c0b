import { randomUUID } from 'node:crypto';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { provisionLocal } from '../../../../lib/local/emulators/provision.js';
import { localClientConfig, localClientConfigs } from '../../../support/local-aws.js';

describe('provisionLocal', () => {
  const s3 = new S3Client(localClientConfig('s3'));
  const sqs = new SQSClient(localClientConfig('sqs'));
  const dynamodb = new DynamoDBClient(localClientConfig('dynamodb'));
  afterAll(() => {
    for (const client of [s3, sqs, dynamodb]) client.destroy();
  });

  it('creates the bucket, the queue with its DLQ redrive, and the semaphore table; idempotently', async () => {
    const suffix = randomUUID().slice(0, 8);
    const options = {
      clientConfig: localClientConfigs(),
      bucket: `prov-${suffix}`,
      queueName: `prov-${suffix}`,
      tableName: `prov-${suffix}`,
      maxReceiveCount: 3,
      visibilityTimeoutSeconds: 45,
    };
    const first = await provisionLocal(options);
    expect(first).toMatchObject({ bucket: `prov-${suffix}`, tableName: `prov-${suffix}` });
    expect(first.dlqArn).toMatch(new RegExp(`:prov-${suffix}-dlq$`));

    await expect(s3.send(new HeadBucketCommand({ Bucket: first.bucket }))).resolves.toBeDefined();
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: first.queueUrl,
        AttributeNames: ['RedrivePolicy', 'VisibilityTimeout'],
      }),
    );
    expect(Attributes?.VisibilityTimeout).toBe('45');
    expect(JSON.parse(Attributes!.RedrivePolicy!)).toEqual({
      deadLetterTargetArn: first.dlqArn,
      maxReceiveCount: 3,
    });
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: first.tableName }));
    expect(Table?.TableStatus).toBe('ACTIVE');
    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');

    // Again, with a changed receive limit: same resources, converged attributes, no error.
    const second = await provisionLocal({ ...options, maxReceiveCount: 4 });
    expect(second).toEqual(first);
    const after = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: first.queueUrl, AttributeNames: ['RedrivePolicy'] }),
    );
    expect(JSON.parse(after.Attributes!.RedrivePolicy!).maxReceiveCount).toBe(4);
  });

  it('rejects bad options with a typed error before creating anything', async () => {
    await expect(provisionLocal({})).rejects.toMatchObject({
      name: 'InvalidLocalOptionError',
      option: 'clientConfig',
    });
    await expect(
      provisionLocal({ clientConfig: localClientConfigs(), maxReceiveCount: 0 }),
    ).rejects.toMatchObject({
      name: 'InvalidLocalOptionError',
      option: 'maxReceiveCount',
    });
  });
});
