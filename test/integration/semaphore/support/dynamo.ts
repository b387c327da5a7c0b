import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoRateBudget } from '../../../../lib/semaphore/index.js';
import { localAwsEndpoints, localClientConfig } from '../../../support/local-aws.js';

/** A client on the run's DynamoDB (dynalite, or DynamoDB Local in test:backends) and a fresh budget table for one test file. */
export async function semaphoreTable(): Promise<{
  client: DynamoDBClient;
  tableName: string;
  endpoint: string;
}> {
  const client = new DynamoDBClient(localClientConfig('dynamodb'));
  const tableName = `semaphore-${randomUUID().slice(0, 8)}`;
  await DynamoRateBudget.createTable(client, tableName);
  return { client, tableName, endpoint: localAwsEndpoints().dynamodb };
}
