import { describe, expect, it } from 'vitest';
import { S3IngestError } from '../../lib/index.js';
import { localAwsEndpoints } from '../support/local-aws.js';

describe('project foundation', () => {
  it('exposes a typed base error whose subclasses keep their name', () => {
    class ExampleError extends S3IngestError {
      override readonly name = 'ExampleError';
    }
    const err = new ExampleError('boom');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ExampleError');
  });

  it('provides the embedded AWS endpoints from global setup', () => {
    const endpoints = localAwsEndpoints();
    expect(endpoints.s3).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(endpoints.dynamodb).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});
