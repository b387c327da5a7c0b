import { classifyS3Request } from '../s3-behaviour/chaos-proxy.js';

/** The AWS services a fault proxy can stand in front of. */
export type AwsService = 's3' | 'dynamodb' | 'sqs';

/** One request as the fault proxy saw it, named the way the SDK names the call. */
export interface AwsCall {
  readonly service: AwsService;
  /**
   * The API operation: for DynamoDB and SQS (JSON protocol) the part of `X-Amz-Target` after the dot
   * (`UpdateItem`, `SendMessageBatch`); for S3 derived from method and path (`GetObject`, `PutObject`,
   * `DeleteObject`, `HeadObject`, `ListObjectsV2`, bucket-level calls by method).
   */
  readonly operation: string;
  readonly method: string;
  /** Path and query as sent. */
  readonly url: string;
  /** S3: the object key (URL-decoded), or the listing's `prefix`; empty for the other services. */
  readonly key: string;
  /** The request body as UTF-8 text (DynamoDB/SQS: the JSON input; S3: the object body of a PUT). */
  readonly body: string;
}

/** `X-Amz-Target: DynamoDB_20120810.UpdateItem` -> `UpdateItem`; `AmazonSQS.SendMessageBatch` -> `SendMessageBatch`. */
export function operationFromTarget(target: string | undefined): string {
  if (target === undefined || target === '') return 'Unknown';
  const dot = target.lastIndexOf('.');
  return dot === -1 ? target : target.slice(dot + 1);
}

function s3Operation(method: string, url: string): string {
  const parsed = new URL(url, 'http://proxy.invalid');
  const path = parsed.pathname.replace(/^\/+/, '');
  const objectLevel = path.includes('/') && path.slice(path.indexOf('/') + 1) !== '';
  const verb = method.toUpperCase();
  if (objectLevel) {
    if (verb === 'GET') return 'GetObject';
    if (verb === 'PUT') return parsed.searchParams.has('partNumber') ? 'UploadPart' : 'PutObject';
    if (verb === 'DELETE') return 'DeleteObject';
    if (verb === 'HEAD') return 'HeadObject';
    return `${verb}Object`;
  }
  if (verb === 'GET') return parsed.searchParams.get('list-type') === '2' ? 'ListObjectsV2' : 'ListObjects';
  if (verb === 'POST' && parsed.searchParams.has('delete')) return 'DeleteObjects';
  if (verb === 'PUT') return 'CreateBucket';
  if (verb === 'DELETE') return 'DeleteBucket';
  if (verb === 'HEAD') return 'HeadBucket';
  return `${verb}Bucket`;
}

/** Names one request of `service` from its method, path, `X-Amz-Target` header and body. */
export function identifyAwsCall(
  service: AwsService,
  request: { method: string; url: string; target?: string | undefined; body: string },
): AwsCall {
  const { method, url, body } = request;
  if (service === 's3') {
    const { key } = classifyS3Request(method, url);
    return { service, operation: s3Operation(method, url), method, url, key, body };
  }
  return { service, operation: operationFromTarget(request.target), method, url, key: '', body };
}
