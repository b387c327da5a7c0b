import { Ajv } from 'ajv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../../lib/ingest/index.js';
import { failedIds, keyOf, lambdaContext, sqsEvent, testHandler } from './handler/support.js';

// Issue 14, defect 6: a config that loadConfig accepts must be a config that works.

/** The schema the README shows for `orders`. Ajv's strictRequired mode used to refuse it at first write. */
const README_ORDERS_SCHEMA = { type: 'object', required: ['total'] };

const env = (overrides: Record<string, string | undefined> = {}) => ({
  BUCKET_NAME: 'records',
  DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq',
  RESOURCES: JSON.stringify({ orders: README_ORDERS_SCHEMA, notes: {} }),
  ...overrides,
});

function configError(overrides: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env(overrides));
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`expected ConfigError for ${JSON.stringify(overrides)}`);
}

describe('BUCKET_NAME follows S3 bucket-naming rules at cold start', () => {
  it.each([
    ['My_Bucket'],
    ['b'],
    ['ab'],
    ['bucket/t=acme'],
    ['x'.repeat(64)],
    ['-bucket'],
    ['bucket-'],
    ['my..bucket'],
    ['192.168.10.1'],
    ['xn--bucket'],
    ['sthree-bucket'],
    ['amzn-s3-demo-bucket'],
    ['bucket-s3alias'],
    ['bucket--ol-s3'],
    ['bucket.mrap'],
    ['bucket--x-s3'],
    ['bucket--table-s3'],
  ])('refuses %j naming BUCKET_NAME', (bucket) => {
    const err = configError({ BUCKET_NAME: bucket });
    expect(err.key).toBe('BUCKET_NAME');
    expect(err.message).toMatch(/^BUCKET_NAME: /);
  });

  it.each([['abc'], ['records'], ['my.bucket.01'], ['x'.repeat(63)], ['1-2-3']])('accepts %j', (bucket) => {
    expect(loadConfig(env({ BUCKET_NAME: bucket })).bucketName).toBe(bucket);
  });
});

describe('every RESOURCES schema is compiled at cold start', () => {
  it('accepts the README example and a schema with properties but no "type"', () => {
    const config = loadConfig(
      env({
        RESOURCES: JSON.stringify({
          orders: README_ORDERS_SCHEMA,
          notes: { properties: { text: { type: 'string' } } },
          tags: { type: 'object', properties: { list: { type: 'array', items: [{ type: 'string' }] } } },
        }),
      }),
    );
    expect(Object.keys(config.resources)).toEqual(['orders', 'notes', 'tags']);
  });

  it.each([
    ['a misspelt type', { type: 'object', properties: { total: { type: 'nubmer' } } }],
    ['an unknown keyword (typo of required)', { type: 'object', requird: ['total'] }],
    ['a pattern that is not a regular expression', { properties: { sku: { pattern: '(' } } }],
    ['an unknown format', { properties: { at: { type: 'string', format: 'date-tme' } } }],
    ['an $async schema', { $async: true, type: 'object' }],
    ['a type that excludes objects (data is always an object)', { type: 'string' }],
  ])('refuses %s naming RESOURCES.<resource>', (_, schema) => {
    const err = configError({ RESOURCES: JSON.stringify({ notes: {}, invoices: schema }) });
    expect(err.key).toBe('RESOURCES.invoices');
    expect(err.message).toMatch(/^RESOURCES\.invoices: /);
  });
});

describe('the handler uses the schemas compiled at load', () => {
  const close: Array<() => Promise<void>> = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(close.splice(0).map((c) => c()));
  });

  it('writes valid records under the README schema and dead-letters only the violation', async () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const { handler, store, config, deadLetters } = testHandler({
      RESOURCES: JSON.stringify({ orders: README_ORDERS_SCHEMA, notes: {} }),
    });
    close.push(() => handler.close());
    const compiledAtLoad = compile.mock.results
      .filter((_, i) => compile.mock.calls[i]?.[0] === config.resources.orders)
      .map((r) => r.value as unknown);
    expect(compiledAtLoad).toHaveLength(1);

    const event = sqsEvent([
      { tenant: 'acme', resource: 'orders', id: 'o-1', data: { total: 5 } },
      { tenant: 'acme', resource: 'orders', id: 'o-2', data: { note: 'no total' } },
      { tenant: 'acme', resource: 'notes', id: 'n-1', data: { text: 'hi' } },
    ]);
    const response = await handler(event, lambdaContext(30_000));

    expect(failedIds(response)).toEqual([]);
    expect(store.keys()).toEqual([keyOf('acme', 'notes', 'n-1'), keyOf('acme', 'orders', 'o-1')]);
    const letters = deadLetters.letters;
    expect(letters.get(event.Records[1]!.messageId)?.reason).toBe('schema-violation');
    expect(letters.size).toBe(1);
    // Every later compile of the same schema object returned the validator compiled at load.
    const later = compile.mock.results
      .filter((_, i) => compile.mock.calls[i]?.[0] === config.resources.orders)
      .map((r) => r.value as unknown);
    expect(new Set(later)).toEqual(new Set(compiledAtLoad));
  });
});
