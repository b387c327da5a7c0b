import { describe, expect, it } from 'vitest';
import {
  DEFAULTS_CONTEXT_KEY,
  ENV_CONTEXT_KEY,
  ENVIRONMENTS_CONTEXT_KEY,
  EnvironmentConfigError,
  loadEnvironmentConfig,
  tombstoneHorizonDays,
} from '../../infra/config.js';
import { cdkJsonContext, withAlarmSubscribers } from './cdk-context.js';

const repoContext = cdkJsonContext();
const PAGE = { email: 'oncall@example.com' };

/** A context lookup over cdk.json with one environment block replaced (or added). */
function contextWith(envName: string, block: unknown, extra: Record<string, unknown> = {}) {
  const environments = { ...(repoContext[ENVIRONMENTS_CONTEXT_KEY] as object), [envName]: block };
  const context: Record<string, unknown> = {
    ...repoContext,
    [ENVIRONMENTS_CONTEXT_KEY]: environments,
    ...extra,
  };
  return (key: string): unknown => context[key];
}

function configError(fn: () => unknown): EnvironmentConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EnvironmentConfigError);
    return err as EnvironmentConfigError;
  }
  throw new Error('expected an EnvironmentConfigError');
}

describe('loadEnvironmentConfig', () => {
  const fromRepo = (key: string): unknown => repoContext[key];

  it('loads every environment of cdk.json once staging and prod name their alarm subscribers', () => {
    const subscribed = withAlarmSubscribers(repoContext);
    for (const name of ['dev', 'staging', 'prod']) {
      const { name: loaded, config } = loadEnvironmentConfig((key) => subscribed[key], name);
      expect(loaded).toBe(name);
      expect(config.reservedConcurrency).toBeGreaterThanOrEqual(config.maxConcurrency);
      expect(config.retention.dlqDays).toBeGreaterThan(config.retention.queueDays);
    }
  });

  it('defaults to dev and honours -c env=<name>', () => {
    expect(loadEnvironmentConfig(fromRepo).name).toBe('dev');
    const subscribed = withAlarmSubscribers(repoContext);
    const withEnv = (key: string): unknown => (key === ENV_CONTEXT_KEY ? 'prod' : subscribed[key]);
    expect(loadEnvironmentConfig(withEnv).name).toBe('prod');
  });

  it('merges environmentDefaults key by key inside nested blocks, and replaces resources whole', () => {
    const defaults = repoContext[DEFAULTS_CONTEXT_KEY] as {
      memoryMb: number;
      retention: { dlqDays: number };
    };
    const lookup = contextWith('qa', { retention: { logDays: 3 }, resources: { only: {} }, alarms: PAGE });
    const { config } = loadEnvironmentConfig(lookup, 'qa');
    expect(config.memoryMb).toBe(defaults.memoryMb);
    expect(config.retention.logDays).toBe(3);
    expect(config.retention.dlqDays).toBe(defaults.retention.dlqDays);
    expect(Object.keys(config.resources)).toEqual(['only']);
  });

  it('names an unknown environment and lists the known ones', () => {
    const err = configError(() => loadEnvironmentConfig(fromRepo, 'qa'));
    expect(err.name).toBe('EnvironmentConfigError');
    expect(err.message).toContain('environments.qa: unknown environment');
    expect(err.message).toContain('dev, staging, prod');
  });

  it('fails when cdk.json has no environments block', () => {
    const err = configError(() => loadEnvironmentConfig(() => undefined, 'dev'));
    expect(err.message).toContain(`context '${ENVIRONMENTS_CONTEXT_KEY}'`);
  });

  it.each([
    [{ batchSize: 0 }, 'environments.qa.batchSize:'],
    [{ timeoutSeconds: 901 }, 'environments.qa.timeoutSeconds:'],
    [{ maxReceiveCount: 3 }, 'environments.qa.maxReceiveCount:'],
    [{ logLevel: 'LOUD' }, 'environments.qa.logLevel:'],
    [{ retention: { logDays: 10 } }, 'environments.qa.retention.logDays:'],
    [{ alarms: { poolErrorRatePercent: 0 } }, 'environments.qa.alarms.poolErrorRatePercent:'],
    [{ resources: { 'Bad/Name': {} } }, 'environments.qa.resources.Bad/Name:'],
    [{ resources: {} }, 'environments.qa.resources: declare at least one resource'],
    [{ memory: 512 }, "environments.qa: unknown key(s) 'memory'"],
    [{ alarms: { emial: 'x' } }, "environments.qa.alarms: unknown key(s) 'emial'"],
  ])('rejects %j naming the key', (block, expected) => {
    const err = configError(() => loadEnvironmentConfig(contextWith('qa', block), 'qa'));
    expect(err.message).toContain(expected);
  });

  it('rejects reserved concurrency below the event source maximum', () => {
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { maxConcurrency: 20, reservedConcurrency: 10 }), 'qa'),
    );
    expect(err.message).toContain('environments.qa.reservedConcurrency: must be >= maxConcurrency (20)');
  });

  it('rejects a batch size over 10 without a batching window', () => {
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { batchSize: 100, maxBatchingWindowSeconds: 0 }), 'qa'),
    );
    expect(err.message).toContain('environments.qa.maxBatchingWindowSeconds:');
  });

  it('rejects a DLQ retention not longer than the source queue retention', () => {
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { retention: { queueDays: 7, dlqDays: 7 } }), 'qa'),
    );
    expect(err.message).toContain(
      'environments.qa.retention.dlqDays: must be longer than retention.queueDays (7)',
    );
  });

  it('rejects a tombstone horizon not longer than queue + DLQ retention (issue 15)', () => {
    const err = configError(() =>
      loadEnvironmentConfig(
        contextWith('qa', { retention: { queueDays: 4, dlqDays: 14, tombstoneDays: 18 } }),
        'qa',
      ),
    );
    expect(err.message).toContain(
      'environments.qa.retention.tombstoneDays: must be longer than retention.queueDays + retention.dlqDays (18)',
    );
    expect(tombstoneHorizonDays({ queueDays: 4, dlqDays: 14, tombstoneDays: 19 })).toBe(19);
    expect(tombstoneHorizonDays({ queueDays: 4, dlqDays: 14 })).toBe(25);
  });

  it('rejects resources whose JSON would not fit the Lambda environment', () => {
    const big = { type: 'object', description: 'x'.repeat(4000) };
    const err = configError(() => loadEnvironmentConfig(contextWith('qa', { resources: { big } }), 'qa'));
    expect(err.message).toMatch(/environments\.qa\.resources: serializes to \d+ bytes/);
  });

  it('lets only dev destroy data', () => {
    expect(
      loadEnvironmentConfig(contextWith('dev', { removalPolicy: 'destroy' }), 'dev').config.removalPolicy,
    ).toBe('destroy');
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { removalPolicy: 'destroy' }), 'qa'),
    );
    expect(err.message).toContain("environments.qa.removalPolicy: only 'dev' may destroy data");
  });

  describe('alarm subscribers', () => {
    it('refuses a non-dev environment whose alarms reach nobody, naming alarms.email', () => {
      const err = configError(() => loadEnvironmentConfig(contextWith('qa', {}), 'qa'));
      expect(err.message).toContain('environments.qa.alarms.email: set alarms.email or alarms.topicArn');
      expect(err.message).toContain('environments.qa.alarms.ticketEmail:');
    });

    it('refuses staging and prod as cdk.json has them until the team names its on-call', () => {
      for (const name of ['staging', 'prod']) {
        const err = configError(() => loadEnvironmentConfig(fromRepo, name));
        expect(err.message).toContain(`environments.${name}.alarms.email:`);
      }
      expect(loadEnvironmentConfig(fromRepo, 'dev').config.alarms.email).toBeUndefined();
    });

    it('accepts an existing page topic ARN, but wants a ticket destination that does not page', () => {
      const topicArn = 'arn:aws:sns:eu-west-1:123456789012:pagerduty';
      const err = configError(() => loadEnvironmentConfig(contextWith('qa', { alarms: { topicArn } }), 'qa'));
      expect(err.message).not.toContain('alarms.email:');
      expect(err.message).toContain('environments.qa.alarms.ticketEmail:');
      const ticketTopicArn = 'arn:aws:sns:eu-west-1:123456789012:tickets';
      const { config } = loadEnvironmentConfig(
        contextWith('qa', { alarms: { topicArn, ticketTopicArn } }),
        'qa',
      );
      expect(config.alarms).toMatchObject({ topicArn, ticketTopicArn });
    });

    it('accepts a page email alone (tickets fall back to it)', () => {
      expect(loadEnvironmentConfig(contextWith('qa', { alarms: PAGE }), 'qa').config.alarms.email).toBe(
        PAGE.email,
      );
    });

    it('rejects a topic ARN that is not an SNS topic ARN', () => {
      const err = configError(() =>
        loadEnvironmentConfig(contextWith('qa', { alarms: { topicArn: 'pagerduty' } }), 'qa'),
      );
      expect(err.message).toContain('environments.qa.alarms.topicArn: must be an SNS topic ARN');
    });
  });

  it('rejects an expiry warning longer than the dead-letter retention', () => {
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { alarms: { ...PAGE, expiryWarningHours: 14 * 24 } }), 'qa'),
    );
    expect(err.message).toContain('environments.qa.alarms.expiryWarningHours: must be shorter');
  });

  it('reports every bad key at once', () => {
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { memoryMb: 1, poolConcurrency: 0 }), 'qa'),
    );
    expect(err.message).toContain('environments.qa.memoryMb:');
    expect(err.message).toContain('environments.qa.poolConcurrency:');
  });
});
