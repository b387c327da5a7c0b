import { describe, expect, it } from 'vitest';
import { identifyAwsCall, operationFromTarget } from '../../../../lib/local/faults/aws-call.js';

describe('identifyAwsCall', () => {
  it.each([
    ['GET', '/b/t=acme/r=orders/id=1.json', 'GetObject', 't=acme/r=orders/id=1.json'],
    ['PUT', '/b/t=acme/r=orders/id=1.json?x-id=PutObject', 'PutObject', 't=acme/r=orders/id=1.json'],
    ['DELETE', '/b/k%20ey', 'DeleteObject', 'k ey'],
    ['HEAD', '/b/k', 'HeadObject', 'k'],
    ['PUT', '/b/k?partNumber=1&uploadId=u', 'UploadPart', 'k'],
    ['GET', '/b?list-type=2&prefix=t%3Dacme%2F', 'ListObjectsV2', 't=acme/'],
    ['GET', '/b', 'ListObjects', ''],
    ['POST', '/b?delete', 'DeleteObjects', ''],
    ['PUT', '/b', 'CreateBucket', ''],
  ])('S3 %s %s -> %s', (method, url, operation, key) => {
    const call = identifyAwsCall('s3', { method, url, body: '' });
    expect(call.operation).toBe(operation);
    expect(call.key).toBe(key);
  });

  it('names DynamoDB and SQS calls by X-Amz-Target', () => {
    expect(
      identifyAwsCall('dynamodb', {
        method: 'POST',
        url: '/',
        target: 'DynamoDB_20120810.UpdateItem',
        body: '{}',
      }).operation,
    ).toBe('UpdateItem');
    expect(
      identifyAwsCall('sqs', { method: 'POST', url: '/', target: 'AmazonSQS.SendMessageBatch', body: '{}' })
        .operation,
    ).toBe('SendMessageBatch');
    expect(operationFromTarget(undefined)).toBe('Unknown');
    expect(operationFromTarget('NoDot')).toBe('NoDot');
  });
});
