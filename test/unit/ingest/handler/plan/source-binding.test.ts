import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../../lib/ingest/errors.js';
import type { IngestHandler } from '../../../../../lib/ingest/handler/ingest-handler.js';
import {
  parseSourceTenants,
  parseTenantPatterns,
  tenantAllowed,
} from '../../../../../lib/ingest/source-tenants.js';
import {
  body,
  failedIds,
  keyOf,
  lambdaContext,
  sqsRecord,
  type TestMessage,
  testHandler,
} from '../support.js';

const BILLING = 'arn:aws:sqs:us-east-1:000000000000:ingest-billing';
const SHOP = 'arn:aws:sqs:us-east-1:000000000000:ingest-shop';
const STRANGER = 'arn:aws:sqs:us-east-1:000000000000:ingest-stranger';
const SOURCE_TENANTS = JSON.stringify({ [BILLING]: ['billing', 'acme-*'], [SHOP]: ['shop'] });

const handlers: IngestHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function setup(env: Record<string, string> = { SOURCE_TENANTS }) {
  const t = testHandler(env);
  handlers.push(t.handler);
  return t;
}

function from(source: string, message: TestMessage, messageId: string): SQSRecord {
  return { ...sqsRecord(body(message), messageId), eventSourceARN: source };
}

describe('tenant-bound producers: the source queue decides which tenants a message may write', () => {
  it('dead-letters tenant-not-allowed and unknown-source before any write, in a batch whose allowed writes succeed', async () => {
    const { handler, store, deadLetters, summaries } = setup();
    const records = [
      from(BILLING, { tenant: 'billing', id: 'b-1' }, 'ok-1'),
      from(BILLING, { tenant: 'shop', id: 'x-1' }, 'cross-1'),
      from(BILLING, { tenant: 'acme-eu', id: 'a-1' }, 'ok-2'),
      from(SHOP, { tenant: 'shop', id: 's-1' }, 'ok-3'),
      from(SHOP, { tenant: 'billing', op: 'delete', id: 'b-1' }, 'cross-2'),
      from(STRANGER, { tenant: 'shop', id: 's-2' }, 'stranger'),
    ];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(response.batchItemFailures).toEqual([]);
    expect(store.keys()).toEqual([
      keyOf('acme-eu', 'orders', 'a-1'),
      keyOf('billing', 'orders', 'b-1'),
      keyOf('shop', 'orders', 's-1'),
    ]);
    // Nothing was read or written for the refused messages (no call on their keys at all).
    const touched = new Set(store.calls.map((c) => c.key));
    expect(touched.has(keyOf('shop', 'orders', 'x-1'))).toBe(false);
    expect(touched.has(keyOf('shop', 'orders', 's-2'))).toBe(false);
    expect(deadLetters.letters.get('cross-1')).toMatchObject({
      reason: 'tenant-not-allowed',
      tenant: 'shop',
    });
    expect(deadLetters.letters.get('cross-2')).toMatchObject({
      reason: 'tenant-not-allowed',
      tenant: 'billing',
    });
    expect(deadLetters.letters.get('stranger')).toMatchObject({ reason: 'unknown-source' });
    expect(deadLetters.letters.get('cross-1')?.detail).toContain(BILLING);
    expect(summaries[0]?.splits.RecordsRejected).toEqual({ 'tenant-not-allowed': 2, 'unknown-source': 1 });
  });

  it('refuses prefix tricks against a prefix pattern', async () => {
    const { handler, store, deadLetters } = setup();
    const tenants = ['acme', 'acme-', 'acmeevil', 'xacme-eu', 'acm'];
    const records = tenants.map((tenant, i) => from(BILLING, { tenant, id: 'o-1' }, `t-${i}`));
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual([]);
    expect(store.keys()).toEqual([]);
    expect([...deadLetters.letters.values()].map((l) => l.reason)).toEqual(
      tenants.map(() => 'tenant-not-allowed'),
    );
  });

  it('never lets a look-alike or differently cased tenant through (refused, nothing written)', async () => {
    const { handler, store, deadLetters } = setup();
    // Cyrillic а, upper case, a trailing space, a zero-width joiner, a fullwidth hyphen.
    const hostile = ['bаlling', 'BILLING', 'billing ', 'bill\u200ding', 'acme\uff0deu'];
    const records = hostile.map((tenant, i) => from(BILLING, { tenant, id: 'o-1' }, `h-${i}`));
    await handler({ Records: records }, lambdaContext(30_000));
    expect(store.keys()).toEqual([]);
    expect(deadLetters.letters.size).toBe(hostile.length);
    for (const letter of deadLetters.letters.values()) expect(letter.reason).toBe('invalid-tenant');
  });

  it('accepts any tenant from any source in single-queue mode (no SOURCE_TENANTS)', async () => {
    const { handler, store } = setup({});
    const records = [
      from(STRANGER, { tenant: 'shop', id: 's-1' }, 'a'),
      from(BILLING, { tenant: 'x', id: 'x-1' }, 'b'),
    ];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(response.batchItemFailures).toEqual([]);
    expect(store.keys()).toEqual([keyOf('shop', 'orders', 's-1'), keyOf('x', 'orders', 'x-1')]);
  });
});

describe('tenantAllowed', () => {
  const list = parseTenantPatterns('k', ['billing', 'acme-*']);
  it.each([
    ['billing', true],
    ['acme-eu', true],
    ['acme--x', true],
    ['acme', false],
    ['acme-', false],
    ['billing2', false],
    ['billin', false],
    ['Billing', false],
    ['acme-EU', false],
    ['acme-eu/../x', false],
    ['', false],
    ['acme-eu\n', false],
    ['__proto__', false],
  ])('%j -> %s', (tenant, expected) => {
    expect(tenantAllowed(list, tenant)).toBe(expected);
  });
});

describe('SOURCE_TENANTS at cold start', () => {
  const bad: [string, string, string][] = [
    ['not JSON', '{', 'SOURCE_TENANTS'],
    ['an array', '[]', 'SOURCE_TENANTS'],
    ['no source', '{}', 'SOURCE_TENANTS'],
    ['not an ARN', '{"ingest-billing":["billing"]}', 'SOURCE_TENANTS.ingest-billing'],
    [
      'an SNS ARN',
      '{"arn:aws:sns:us-east-1:000000000000:t":["a"]}',
      'SOURCE_TENANTS.arn:aws:sns:us-east-1:000000000000:t',
    ],
    ['no tenants', `{"${BILLING}":[]}`, `SOURCE_TENANTS.${BILLING}`],
    ['a bare star', `{"${BILLING}":["*"]}`, `SOURCE_TENANTS.${BILLING}`],
    ['upper case', `{"${BILLING}":["Billing"]}`, `SOURCE_TENANTS.${BILLING}`],
    ['a star inside', `{"${BILLING}":["ac*me"]}`, `SOURCE_TENANTS.${BILLING}`],
    ['not a string', `{"${BILLING}":[7]}`, `SOURCE_TENANTS.${BILLING}`],
  ];
  it.each(bad)('refuses %s with a ConfigError naming the key', (_, text, key) => {
    let error: unknown;
    try {
      parseSourceTenants(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).key).toBe(key);
  });

  it('fails the handler config load (cold start), not the first message', () => {
    expect(() => testHandler({ SOURCE_TENANTS: '{"x":["a"]}' })).toThrow(ConfigError);
  });
});
