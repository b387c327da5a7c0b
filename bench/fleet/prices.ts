// AWS list prices the cost per million messages is computed from: us-east-1, on-demand, no free tier,
// no Savings Plans. Taken on PRICES_DATE from the public pricing pages named beside each figure; prices
// change, so a quote of the results must name this date.

export const PRICES_DATE = '2026-11-30';
export const PRICES_REGION = 'us-east-1';

export const PRICES = {
  /** aws.amazon.com/lambda/pricing: Arm, first 7.5 billion GB-s per month. */
  lambdaArmPerGbSecond: 0.0000133334,
  /** aws.amazon.com/lambda/pricing: requests. */
  lambdaPerMillionRequests: 0.2,
  /** aws.amazon.com/sqs/pricing: standard queue, per million requests (each 64 KB chunk is one request). */
  sqsStandardPerMillionRequests: 0.4,
  /** aws.amazon.com/s3/pricing: S3 Standard PUT, COPY, POST, LIST per 1,000 requests. */
  s3PutPer1000: 0.005,
  /** aws.amazon.com/s3/pricing: S3 Standard GET, SELECT and all other requests (HEAD) per 1,000. */
  s3GetPer1000: 0.0004,
  /** aws.amazon.com/s3/pricing: DELETE requests are free. */
  s3DeletePer1000: 0,
  /** aws.amazon.com/dynamodb/pricing/on-demand: per million write request units (since the Nov 2024 cut). */
  dynamoPerMillionWriteUnits: 0.625,
  /** aws.amazon.com/dynamodb/pricing/on-demand: per million read request units. */
  dynamoPerMillionReadUnits: 0.125,
  /** aws.amazon.com/cloudwatch/pricing: logs ingestion (Standard class; EMF lines are log events). */
  cloudWatchLogsPerGb: 0.5,
} as const;

/** What a run counted, the inputs of the bill. */
export interface BillableUsage {
  messages: number;
  lambdaGbSeconds: number;
  lambdaRequests: number;
  sqsRequests: number;
  s3Puts: number;
  s3Gets: number;
  s3Heads: number;
  s3Lists: number;
  s3Deletes: number;
  dynamoWriteUnits: number;
  dynamoReadUnits: number;
  logBytes: number;
}

export interface CostBreakdown {
  lambda: number;
  sqs: number;
  s3: number;
  dynamodb: number;
  cloudwatch: number;
  total: number;
}

/** USD per million messages, by service. */
export function costPerMillion(usage: BillableUsage): CostBreakdown {
  const perMessage = 1_000_000 / Math.max(1, usage.messages);
  const lambda =
    usage.lambdaGbSeconds * PRICES.lambdaArmPerGbSecond +
    (usage.lambdaRequests / 1e6) * PRICES.lambdaPerMillionRequests;
  const sqs = (usage.sqsRequests / 1e6) * PRICES.sqsStandardPerMillionRequests;
  const s3 =
    ((usage.s3Puts + usage.s3Lists) / 1000) * PRICES.s3PutPer1000 +
    ((usage.s3Gets + usage.s3Heads) / 1000) * PRICES.s3GetPer1000 +
    (usage.s3Deletes / 1000) * PRICES.s3DeletePer1000;
  const dynamodb =
    (usage.dynamoWriteUnits / 1e6) * PRICES.dynamoPerMillionWriteUnits +
    (usage.dynamoReadUnits / 1e6) * PRICES.dynamoPerMillionReadUnits;
  const cloudwatch = (usage.logBytes / 2 ** 30) * PRICES.cloudWatchLogsPerGb;
  const scale = (usd: number) => usd * perMessage;
  return {
    lambda: scale(lambda),
    sqs: scale(sqs),
    s3: scale(s3),
    dynamodb: scale(dynamodb),
    cloudwatch: scale(cloudwatch),
    total: scale(lambda + sqs + s3 + dynamodb + cloudwatch),
  };
}
