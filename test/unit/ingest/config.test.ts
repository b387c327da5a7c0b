import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS, ConfigError, loadConfig } from '../../../lib/ingest/index.js';

const minimal = {
  BUCKET_NAME: 'records',
  DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq',
  RESOURCES: JSON.stringify({ orders: { type: 'object', required: ['total'] }, notes: {} }),
};

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected ConfigError');
}

describe('loadConfig', () => {
  it('reads RESOURCE_SHARDS as shard counts of declared resources; unset or 1 is unsharded', () => {
    expect(loadConfig(minimal).resourceShards).toBeUndefined();
    const config = loadConfig({ ...minimal, RESOURCE_SHARDS: '{"orders":16,"notes":1}' });
    expect({ ...config.resourceShards }).toEqual({ orders: 16 });
    expect(loadConfig({ ...minimal, RESOURCE_SHARDS: ' ' }).resourceShards).toBeUndefined();
    expect(loadConfig({ ...minimal, RESOURCE_SHARDS: '{"notes":1}' }).resourceShards).toBeUndefined();
    expect(loadConfig({ ...minimal, RESOURCE_SHARDS: '{"orders":4096}' }).resourceShards?.orders).toBe(4096);
  });

  it.each([
    ['{"orders":0}', 'RESOURCE_SHARDS.orders', /integer in 1\.\.4096, got 0/],
    ['{"orders":4097}', 'RESOURCE_SHARDS.orders', /got 4097/],
    ['{"orders":2.5}', 'RESOURCE_SHARDS.orders', /got 2\.5/],
    ['{"orders":"4"}', 'RESOURCE_SHARDS.orders', /got "4"/],
    ['{"invoices":4}', 'RESOURCE_SHARDS.invoices', /no resource declared in RESOURCES/],
    ['{"__proto__":4}', 'RESOURCE_SHARDS.__proto__', /no resource declared/],
    ['[4]', 'RESOURCE_SHARDS', /JSON object/],
    ['{orders:4}', 'RESOURCE_SHARDS', /not JSON/],
  ])('refuses RESOURCE_SHARDS=%s at cold start, naming %s', (text, key, message) => {
    const err = configError({ ...minimal, RESOURCE_SHARDS: text });
    expect(err.key).toBe(key);
    expect(err.message).toMatch(message);
  });

  it('applies the documented defaults', () => {
    const config = loadConfig(minimal);
    expect(config).toEqual({
      bucketName: 'records',
      dlqUrl: minimal.DLQ_URL,
      resources: { orders: { type: 'object', required: ['total'] }, notes: {} },
      poolConcurrency: 64,
      s3PrefixWriteRate: 3500,
      endpoints: { s3: undefined, sqs: undefined, dynamodb: undefined },
      s3ForcePathStyle: false,
      deadlineMarginMs: 5000,
      writeTimeoutMs: 3000,
      writeRetries: 3,
      tenantCacheSize: 100,
    });
    expect(config.semaphoreTable).toBeUndefined();
    expect(CONFIG_DEFAULTS.TENANT_CACHE_SIZE).toBe(config.tenantCacheSize);
  });

  it('reads every optional key', () => {
    const config = loadConfig({
      ...minimal,
      SEMAPHORE_TABLE: 'sem',
      POOL_CONCURRENCY: '8',
      S3_PREFIX_WRITE_RATE: '100',
      DEADLINE_MARGIN_MS: '2000',
      WRITE_TIMEOUT_MS: '1500',
      WRITE_RETRIES: '0',
      TENANT_CACHE_SIZE: '5',
      AWS_REGION: 'eu-west-1',
    });
    expect(config).toMatchObject({
      semaphoreTable: 'sem',
      poolConcurrency: 8,
      s3PrefixWriteRate: 100,
      deadlineMarginMs: 2000,
      writeTimeoutMs: 1500,
      writeRetries: 0,
      tenantCacheSize: 5,
      region: 'eu-west-1',
    });
  });

  it('resolves endpoints like the SDK: per service wins over AWS_ENDPOINT_URL', () => {
    const config = loadConfig({
      ...minimal,
      AWS_ENDPOINT_URL: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000',
    });
    expect(config.endpoints).toEqual({
      s3: 'http://127.0.0.1:4566',
      sqs: 'http://127.0.0.1:4566',
      dynamodb: 'http://127.0.0.1:8000',
    });
    expect(config.s3ForcePathStyle).toBe(true);

    const onlySqs = loadConfig({ ...minimal, AWS_ENDPOINT_URL_SQS: 'http://localhost:9324' });
    expect(onlySqs.endpoints).toEqual({ s3: undefined, sqs: 'http://localhost:9324', dynamodb: undefined });
    expect(onlySqs.s3ForcePathStyle).toBe(false);

    const ignored = loadConfig({
      ...minimal,
      AWS_ENDPOINT_URL: 'http://127.0.0.1:4566',
      AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true',
    });
    expect(ignored.endpoints.s3).toBeUndefined();
    expect(ignored.s3ForcePathStyle).toBe(false);
  });

  it('treats blank values as unset', () => {
    expect(loadConfig({ ...minimal, SEMAPHORE_TABLE: '', POOL_CONCURRENCY: ' ' }).poolConcurrency).toBe(64);
    expect(configError({ ...minimal, BUCKET_NAME: '  ' }).key).toBe('BUCKET_NAME');
  });

  it('names the bad key', () => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ ...minimal, BUCKET_NAME: undefined }, 'BUCKET_NAME'],
      [{ ...minimal, DLQ_URL: undefined }, 'DLQ_URL'],
      [{ ...minimal, DLQ_URL: 'ingest-dlq' }, 'DLQ_URL'],
      [{ ...minimal, RESOURCES: undefined }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '{orders: {}}' }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '["orders"]' }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '{}' }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '{"Orders": {}}' }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '{"../x": {}}' }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '{"orders": true}' }, 'RESOURCES'],
      [{ ...minimal, RESOURCES: '{"orders": {"type": "banana"}}' }, 'RESOURCES.orders'],
      [{ ...minimal, POOL_CONCURRENCY: '0' }, 'POOL_CONCURRENCY'],
      [{ ...minimal, POOL_CONCURRENCY: '1.5' }, 'POOL_CONCURRENCY'],
      [{ ...minimal, POOL_CONCURRENCY: 'lots' }, 'POOL_CONCURRENCY'],
      [{ ...minimal, POOL_CONCURRENCY: '-3' }, 'POOL_CONCURRENCY'],
      [{ ...minimal, S3_PREFIX_WRITE_RATE: '1e3' }, 'S3_PREFIX_WRITE_RATE'],
      [{ ...minimal, WRITE_RETRIES: '99999999999999999999' }, 'WRITE_RETRIES'],
      [{ ...minimal, TENANT_CACHE_SIZE: '0' }, 'TENANT_CACHE_SIZE'],
      [{ ...minimal, WRITE_TIMEOUT_MS: '9000' }, 'DEADLINE_MARGIN_MS'],
      [{ ...minimal, AWS_ENDPOINT_URL: 'localhost:4566' }, 'AWS_ENDPOINT_URL'],
      [{ ...minimal, AWS_ENDPOINT_URL_S3: 'ftp://x' }, 'AWS_ENDPOINT_URL_S3'],
    ];
    for (const [env, key] of cases) {
      const err = configError(env);
      expect(err.name).toBe('ConfigError');
      expect(err.key, err.message).toBe(key);
      expect(err.message.startsWith(`${key}: `)).toBe(true);
    }
  });

  it('keeps resources in a map without a prototype, so only declared names are found', () => {
    const config = loadConfig(minimal);
    expect(Object.getPrototypeOf(config.resources)).toBeNull();
    expect(config.resources.constructor).toBeUndefined();
  });
});
