import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS, ConfigError, loadConfig } from '../../../lib/ingest/index.js';

// Issue 33: the deadline knobs fail the cold start when they cannot work, naming the key.

const minimal = {
  BUCKET_NAME: 'records',
  DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq',
  RESOURCES: JSON.stringify({ orders: {} }),
};

function configError(overrides: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig({ ...minimal, ...overrides });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`expected ConfigError for ${JSON.stringify(overrides)}`);
}

const queueArn = (name: string) => `arn:aws:sqs:eu-west-1:123456789012:${name}`;
const sourceTenants = (name: string) => JSON.stringify({ [queueArn(name)]: ['billing'] });

describe('FUNCTION_TIMEOUT_SECONDS against DEADLINE_MARGIN_MS (a short timeout never writes)', () => {
  it.each([['1'], ['5'], ['9']])(
    'refuses a %s s timeout with the default 5,000 ms margin, naming both keys',
    (timeout) => {
      const err = configError({ FUNCTION_TIMEOUT_SECONDS: timeout });
      expect(err).toMatchObject({ name: 'ConfigError', key: 'DEADLINE_MARGIN_MS' });
      expect(err.message).toContain('FUNCTION_TIMEOUT_SECONDS');
      expect(err.message).toContain(`${CONFIG_DEFAULTS.DEADLINE_MARGIN_MS}`);
    },
  );

  it('accepts a timeout of at least twice the margin, and a short one with a margin to match', () => {
    expect(loadConfig({ ...minimal, FUNCTION_TIMEOUT_SECONDS: '10' }).functionTimeoutSeconds).toBe(10);
    const short = loadConfig({
      ...minimal,
      FUNCTION_TIMEOUT_SECONDS: '3',
      DEADLINE_MARGIN_MS: '1500',
      WRITE_TIMEOUT_MS: '1000',
    });
    expect(short).toMatchObject({ functionTimeoutSeconds: 3, deadlineMarginMs: 1500 });
  });

  it('does not check when the timeout is unknown (local runs), and refuses one Lambda cannot have', () => {
    expect(loadConfig(minimal).functionTimeoutSeconds).toBeUndefined();
    expect(configError({ FUNCTION_TIMEOUT_SECONDS: '901' }).key).toBe('FUNCTION_TIMEOUT_SECONDS');
    expect(configError({ FUNCTION_TIMEOUT_SECONDS: '0' }).key).toBe('FUNCTION_TIMEOUT_SECONDS');
  });
});

describe('upper bounds of the deadline knobs', () => {
  it.each([
    ['DEADLINE_MARGIN_MS', '450001', { WRITE_TIMEOUT_MS: '1000' }],
    ['WRITE_TIMEOUT_MS', '450001', { DEADLINE_MARGIN_MS: '450000' }],
  ] as const)('refuses %s=%s naming the key and its maximum', (key, value, others) => {
    const err = configError({ ...others, [key]: value });
    expect(err).toMatchObject({ name: 'ConfigError', key });
    expect(err.message).toMatch(new RegExp(`^${key}: .*<= ${Number(value) - 1}`));
  });

  it('accepts each knob at its maximum', () => {
    const config = loadConfig({
      ...minimal,
      DEADLINE_MARGIN_MS: '450000',
      WRITE_TIMEOUT_MS: '450000',
    });
    expect(config).toMatchObject({
      deadlineMarginMs: 450_000,
      writeTimeoutMs: 450_000,
    });
  });
});

describe('SOURCE_TENANTS takes every queue name SQS allows', () => {
  it.each([
    ['a standard name of 76 characters', 'q'.repeat(76)],
    ['a standard name of 80 characters', 'q'.repeat(80)],
    ['a FIFO name of 80 characters with its suffix', `${'q'.repeat(75)}.fifo`],
  ])('accepts %s', (_, name) => {
    const config = loadConfig({ ...minimal, SOURCE_TENANTS: sourceTenants(name) });
    expect([...(config.sourceTenants?.keys() ?? [])]).toEqual([queueArn(name)]);
  });

  it.each([
    ['a standard name of 81 characters', 'q'.repeat(81)],
    ['a FIFO name of 81 characters with its suffix', `${'q'.repeat(76)}.fifo`],
  ])('refuses %s naming the entry', (_, name) => {
    const err = configError({ SOURCE_TENANTS: sourceTenants(name) });
    expect(err).toMatchObject({ name: 'ConfigError', key: `SOURCE_TENANTS.${queueArn(name)}` });
  });
});
