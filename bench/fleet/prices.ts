// AWS list prices the cost per million messages is computed from: us-east-1, on-demand, no free tier,
// no Savings Plans, first pricing tier. Each figure names the pages it was checked against (with the
// `search` tool's stored copies, on PRICES_DATE; the date in brackets is the page's own, where it gives
// one). AWS renders its own pricing tables client-side, so the stored copies of aws.amazon.com pages often
// lack the numbers: each figure is therefore confirmed by at least one dated third-party page quoting the
// us-east-1 list price, and the billing units by AWS's own documentation. Prices change: a quote of the
// results must name this date.
//
// Checked 2026-11-30, no figure needed a correction:
// - Lambda Arm $0.0000133334 per GB-s (first 7.5 billion GB-s/month), $0.20 per million requests:
//   cloudchipr.com/blog/aws-lambda-pricing ("Ultimate Guide 2024": "ARM Pricing - First 7.5 Billion
//   GB-seconds per month: $0.0000133334 per GB-second"); the $0.20 per million requests in
//   api-evangelist/aws-lambda plans/aws-lambda-plans-pricing.yml (transcribed from aws.amazon.com/lambda/pricing
//   [2026-09-20]). aws.amazon.com/lambda/pricing: duration rounded up to 1 ms; INIT billed too.
// - SQS standard $0.40 per million requests, every 64 KB chunk of a payload one request:
//   factualminds.com/blog/amazon-sqs-pricing-64kb-rule-fifo-vs-standard [2026-06-13];
//   cloudburn.io/blog/amazon-sqs-pricing [2026-03-14] ("$0.40/M (first 100B)").
// - S3 Standard PUT/COPY/POST/LIST $0.005 and GET/SELECT/HEAD $0.0004 per 1,000; DELETE free:
//   c3x.dev/blog/s3-request-fees-explained ("Tier 1 (PUT, COPY, POST, LIST: $0.005 per 1,000) and Tier 2
//   (GET, HEAD, SELECT: $0.0004 per 1,000)"); aws.amazon.com/s3/faqs (deletes are not charged).
// - DynamoDB on-demand $0.625 per million WRU, $0.125 per million RRU (after the 50% cut of 2024-11-01):
//   airbyte.com/data-engineering-resources/dynamodb-pricing [2025-07-21]; jusdb.com DynamoDB cost guide
//   [2025-08-19] (the cut). Units: aws.amazon.com/dynamodb/pricing/on-demand and the Developer Guide's
//   "DynamoDB read and write operations" (a strongly consistent read of up to 4 KB = 1 RRU; a write of up
//   to 1 KB = 1 WRU).
// - CloudWatch Logs ingestion $0.50 per GB (Standard log class): c3x.dev/blog/cloudwatch-logs-cost-optimization
//   ("us-east-1, June 2026 ... Ingestion: $0.50 per GB"). EMF lines are log events, billed as ingestion.

export const PRICES_DATE = '2026-11-30';
export const PRICES_REGION = 'us-east-1';

export const PRICES = {
  /** Lambda, Arm, first 7.5 billion GB-s per month. */
  lambdaArmPerGbSecond: 0.0000133334,
  /** Lambda requests. */
  lambdaPerMillionRequests: 0.2,
  /** SQS standard queue, per million requests (each 64 KB chunk is one request). */
  sqsStandardPerMillionRequests: 0.4,
  /** S3 Standard PUT, COPY, POST, LIST per 1,000 requests. */
  s3PutPer1000: 0.005,
  /** S3 Standard GET, SELECT and all other requests (HEAD) per 1,000. */
  s3GetPer1000: 0.0004,
  /** S3 DELETE requests are free. */
  s3DeletePer1000: 0,
  /** DynamoDB on-demand, per million write request units. */
  dynamoPerMillionWriteUnits: 0.625,
  /** DynamoDB on-demand, per million read request units. */
  dynamoPerMillionReadUnits: 0.125,
  /** CloudWatch Logs ingestion, Standard class (EMF lines are log events). */
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
