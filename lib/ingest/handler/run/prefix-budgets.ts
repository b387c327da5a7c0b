import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoRateBudget } from '../../../semaphore/dynamo-rate-budget.js';
import type { IngestConfig } from '../../config.js';
import { releaseTimeoutMs } from './prefix-rates.js';
import type { RateBudgetFactory } from './rate-holder.js';

/**
 * The handler's prefix budgets in the semaphore table (docs/fleet-cap.md): one item per prefix, its
 * ceiling `S3_PREFIX_WRITE_RATE` (a new item starting where `PrefixRates` says), reports bounded like releases (a quarter of `DEADLINE_MARGIN_MS`).
 */
export function dynamoRateBudgets(
  config: IngestConfig,
  client: DynamoDBClient,
  tableName: string,
): RateBudgetFactory {
  const reportTimeoutMs = releaseTimeoutMs(config);
  return (name, ceiling, startRate) =>
    new DynamoRateBudget({ client, tableName, name, ceiling, startRate, reportTimeoutMs });
}
