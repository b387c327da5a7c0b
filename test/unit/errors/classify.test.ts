import { describe, expect, it } from 'vitest';
import { httpStatusOf, isThrottling, isTimeout, isTransient } from '../../../lib/errors/index.js';

/** An error shaped as the AWS SDK v3 hands it to callers. */
function sdkError(name: string, status?: number, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status }, ...extra });
}

describe('error taxonomy', () => {
  it('throttling: S3 SlowDown, DynamoDB/SQS throttling codes, 429 and 503 whatever the name', () => {
    expect(isThrottling(sdkError('SlowDown', 503))).toBe(true);
    expect(isThrottling(sdkError('ThrottlingException', 400))).toBe(true);
    expect(isThrottling(sdkError('ProvisionedThroughputExceededException', 400))).toBe(true);
    expect(isThrottling(sdkError('RequestThrottled', 403))).toBe(true);
    expect(isThrottling(sdkError('Unknown', 429))).toBe(true);
    expect(isThrottling(sdkError('Unknown', 503))).toBe(true);
    expect(isThrottling(sdkError('Unknown', 400, { $retryable: { throttling: true } }))).toBe(true);
    expect(isThrottling(sdkError('InternalError', 500))).toBe(false);
    expect(isThrottling(sdkError('AccessDenied', 403))).toBe(false);
    expect(isThrottling(Object.assign(new Error('x'), { code: 'SlowDown' }))).toBe(true);
  });

  it('timeouts: the pool, the platform and the services', () => {
    expect(isTimeout(Object.assign(new Error('t'), { name: 'TaskTimeoutError' }))).toBe(true);
    expect(isTimeout(AbortSignal.timeout(0).reason ?? new DOMException('t', 'TimeoutError'))).toBe(true);
    expect(isTimeout(sdkError('RequestTimeout', 400))).toBe(true);
    expect(isTimeout(sdkError('SlowDown', 503))).toBe(false);
  });

  it('transient: 5xx, 409 ConditionalRequestConflict, network resets, $retryable; 4xx permanent', () => {
    expect(isTransient(sdkError('ConditionalRequestConflict', 409))).toBe(true);
    expect(isTransient(sdkError('Whatever', 409))).toBe(true);
    expect(isTransient(sdkError('InternalError', 500))).toBe(true);
    expect(isTransient(sdkError('Bad', 502))).toBe(true);
    expect(isTransient(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isTransient(new Error('socket hang up'))).toBe(true);
    expect(isTransient(sdkError('X', 400, { $retryable: {} }))).toBe(true);
    expect(isTransient(sdkError('PreconditionFailed', 412))).toBe(false);
    expect(isTransient(sdkError('NoSuchKey', 404))).toBe(false);
    expect(isTransient(sdkError('ConditionalCheckFailedException', 400))).toBe(false);
    expect(isTransient(new TypeError('bug'))).toBe(false);
    expect(isTransient('string')).toBe(false);
    expect(isTransient(null)).toBe(false);
  });

  it('httpStatusOf reads the SDK metadata only when it is a number', () => {
    expect(httpStatusOf(sdkError('X', 412))).toBe(412);
    expect(httpStatusOf(sdkError('X'))).toBeUndefined();
    expect(httpStatusOf(undefined)).toBeUndefined();
  });
});
