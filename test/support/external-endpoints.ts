import type { LocalAwsEndpoints } from '../../lib/local/emulators/local-aws.js';

/**
 * Endpoints named by the SDK's own variables, or undefined when none is set. A per-service variable wins
 * over `AWS_ENDPOINT_URL`; a partial set (some service without an endpoint) is an error, not a silent mix
 * of emulators and something else.
 */
export function externalEndpointsFromEnv(
  env: Record<string, string | undefined>,
): LocalAwsEndpoints | undefined {
  const shared = env.AWS_ENDPOINT_URL || undefined;
  const s3 = env.AWS_ENDPOINT_URL_S3 || shared;
  const sqs = env.AWS_ENDPOINT_URL_SQS || shared;
  const dynamodb = env.AWS_ENDPOINT_URL_DYNAMODB || shared;
  if (s3 === undefined && sqs === undefined && dynamodb === undefined) return undefined;
  if (s3 === undefined || sqs === undefined || dynamodb === undefined) {
    throw new Error(
      'Set AWS_ENDPOINT_URL, or all of AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_DYNAMODB',
    );
  }
  return { s3, sqs, dynamodb };
}
