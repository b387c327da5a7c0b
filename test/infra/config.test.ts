import { describe, expect, it } from 'vitest';
import {
  DEFAULTS_CONTEXT_KEY,
  ENV_CONTEXT_KEY,
  ENVIRONMENTS_CONTEXT_KEY,
  EnvironmentConfigError,
  loadEnvironmentConfig,
  tombstoneHorizonDays,
} from '../../infra/config.js';
import { cdkJsonContext, TEST_RUNBOOK_BASE_URL, withDeploySettings } from './cdk-context.js';

const repoContext = cdkJsonContext();
const PAGE = { email: 'oncall@example.com' };

/**
 * A context lookup over cdk.json with one environment block replaced (or added), and a runbook base URL
 * given as `-c runbookBaseUrl=...` unless `extra` says otherwise.
 */
function contextWith(envName: string, block: unknown, extra: Record<string, unknown> = {}) {
  const environments = { ...(repoContext[ENVIRONMENTS_CONTEXT_KEY] as object), [envName]: block };
  const context: Record<string, unknown> = {
    ...repoContext,
    [ENVIRONMENTS_CONTEXT_KEY]: environments,
    runbookBaseUrl: TEST_RUNBOOK_BASE_URL,
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
    const subscribed = withDeploySettings(repoContext);
    for (const name of ['dev', 'staging', 'prod']) {
      const { name: loaded, config } = loadEnvironmentConfig((key) => subscribed[key], name);
      expect(loaded).toBe(name);
      expect(config.reservedConcurrency).toBeGreaterThanOrEqual(config.maxConcurrency);
      expect(config.retention.dlqDays).toBeGreaterThan(config.retention.queueDays);
    }
  });

  it('defaults to dev and honours -c env=<name>', () => {
    expect(loadEnvironmentConfig(fromRepo).name).toBe('dev');
    const subscribed = withDeploySettings(repoContext);
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

  it('replaces resourceShards whole, like resources', () => {
    // The default shards `orders`, which qa does not declare: merged key by key, qa would fail validation.
    const defaults = { ...(repoContext[DEFAULTS_CONTEXT_KEY] as object), resourceShards: { orders: 8 } };
    const block = { resources: { only: {} }, resourceShards: { only: 4 }, alarms: PAGE };
    const lookup = contextWith('qa', block, { [DEFAULTS_CONTEXT_KEY]: defaults });
    expect(loadEnvironmentConfig(lookup, 'qa').config.resourceShards).toEqual({ only: 4 });
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
    [{ resourceShards: { orders: 0 } }, 'environments.qa.resourceShards.orders:'],
    [{ resourceShards: { orders: 4097 } }, 'environments.qa.resourceShards.orders:'],
    [
      { resourceShards: { invoices: 4 } },
      'environments.qa.resourceShards.invoices: names no resource declared',
    ],
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
    it('refuses a non-dev environment whose alarms reach nobody, in one line naming the keys to set', () => {
      const err = configError(() => loadEnvironmentConfig(contextWith('qa', {}), 'qa'));
      expect(err.message).not.toContain('\n');
      expect(err.message).toMatch(/^environments\.qa: set alarmEmail/);
      for (const key of ['alarmTopicArn', 'ticketEmail', 'ticketTopicArn', 'S3_INGEST_ALARM_EMAIL']) {
        expect(err.message).toContain(key);
      }
      expect(err.message).toContain('cdk.json under environments.qa (alarms.email');
    });

    it('refuses staging and prod as cdk.json has them until a deployment names its on-call', () => {
      for (const name of ['staging', 'prod']) {
        const err = configError(() => loadEnvironmentConfig(fromRepo, name));
        expect(err.message).toMatch(new RegExp(`^environments\\.${name}: set alarmEmail`));
        expect(err.message).toContain('runbookBaseUrl');
      }
      expect(loadEnvironmentConfig(fromRepo, 'dev').config.alarms.email).toBeUndefined();
    });

    it('accepts an existing page topic ARN, but wants a ticket destination that does not page', () => {
      const topicArn = 'arn:aws:sns:eu-west-1:123456789012:pagerduty';
      const err = configError(() => loadEnvironmentConfig(contextWith('qa', { alarms: { topicArn } }), 'qa'));
      expect(err.message).not.toMatch(/set alarmEmail/);
      expect(err.message).toMatch(/^environments\.qa: set ticketEmail or ticketTopicArn/);
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

describe('what synth refuses (issue 33)', () => {
  const producer = (name: string) => ({ name, tenants: [name] });

  it('refuses a function timeout shorter than twice the deadline margin, naming both keys', () => {
    const err = configError(() =>
      loadEnvironmentConfig(contextWith('qa', { alarms: PAGE, timeoutSeconds: 9 }), 'qa'),
    );
    expect(err.message).toContain('environments.qa.timeoutSeconds: must be >= 10');
    expect(err.message).toContain('DEADLINE_MARGIN_MS');
    const { config } = loadEnvironmentConfig(contextWith('qa', { alarms: PAGE, timeoutSeconds: 10 }), 'qa');
    expect(config.timeoutSeconds).toBe(10);
  });

  it('refuses producers whose event sources together may run more invocations than are reserved', () => {
    const oversubscribed = {
      alarms: PAGE,
      maxConcurrency: 50,
      reservedConcurrency: 60,
      producers: [producer('alpha'), producer('beta')],
    };
    const err = configError(() => loadEnvironmentConfig(contextWith('qa', oversubscribed), 'qa'));
    expect(err.message).toContain(
      'environments.qa.reservedConcurrency: must be >= maxConcurrency x event sources (50 x 2 = 100)',
    );
    const { config } = loadEnvironmentConfig(
      contextWith('qa', { ...oversubscribed, reservedConcurrency: 100 }),
      'qa',
    );
    expect(config.reservedConcurrency).toBe(100);
  });
});

describe('deployment settings without editing cdk.json', () => {
  const noRunbook = { runbookBaseUrl: undefined };
  const load = (context: Record<string, unknown>, env: Record<string, string> = {}) =>
    loadEnvironmentConfig(contextWith('qa', {}, { ...context }), 'qa', { env });

  const DESTINATIONS = {
    email: 'page@example.com',
    topicArn: 'arn:aws:sns:eu-west-1:123456789012:pager',
    ticketEmail: 'ticket@example.com',
    ticketTopicArn: 'arn:aws:sns:eu-west-1:123456789012:tickets',
  };

  it.each([
    [
      '-c context keys',
      {
        alarmEmail: DESTINATIONS.email,
        alarmTopicArn: DESTINATIONS.topicArn,
        ticketEmail: DESTINATIONS.ticketEmail,
        ticketTopicArn: DESTINATIONS.ticketTopicArn,
      },
      {},
    ],
    [
      'S3_INGEST_* environment variables',
      {},
      {
        S3_INGEST_ALARM_EMAIL: DESTINATIONS.email,
        S3_INGEST_ALARM_TOPIC_ARN: DESTINATIONS.topicArn,
        S3_INGEST_TICKET_EMAIL: DESTINATIONS.ticketEmail,
        S3_INGEST_TICKET_TOPIC_ARN: DESTINATIONS.ticketTopicArn,
      },
    ],
  ])('takes alarm destinations from %s', (_, context, env) => {
    expect(load(context, env).config.alarms).toMatchObject(DESTINATIONS);
  });

  it('prefers context over the environment variable over cdk.json, key by key', () => {
    const lookup = contextWith(
      'qa',
      { alarms: { email: 'json@example.com', ticketEmail: 'json-ticket@example.com' } },
      { alarmEmail: 'context@example.com' },
    );
    const env = {
      S3_INGEST_ALARM_EMAIL: 'env@example.com',
      S3_INGEST_TICKET_EMAIL: 'env-ticket@example.com',
    };
    expect(loadEnvironmentConfig(lookup, 'qa', { env }).config.alarms).toMatchObject({
      email: 'context@example.com',
      ticketEmail: 'env-ticket@example.com',
    });
    const fromJson = loadEnvironmentConfig(lookup, 'qa', { env: {} }).config.alarms;
    expect(fromJson).toMatchObject({ email: 'context@example.com', ticketEmail: 'json-ticket@example.com' });
  });

  it('names the -c key or the variable of a bad value', () => {
    expect(configError(() => load({ alarmEmail: 'not-an-address' })).message).toMatch(/^-c alarmEmail: /);
    expect(
      configError(() => load({ alarmEmail: 'a@example.com' }, { S3_INGEST_TICKET_TOPIC_ARN: 'tickets' }))
        .message,
    ).toMatch(/^S3_INGEST_TICKET_TOPIC_ARN: must be an SNS topic ARN/);
  });

  it('links runbooks by an absolute URL: <runbookBaseUrl>/docs/runbooks.md', () => {
    const viaContext = load({ alarmEmail: 'a@example.com', runbookBaseUrl: 'https://git.example.com/ops/' });
    expect(viaContext.config.runbookBaseUrl).toBe('https://git.example.com/ops');
    const viaEnv = load(
      { ...noRunbook, alarmEmail: 'a@example.com' },
      { S3_INGEST_RUNBOOK_BASE_URL: 'https://git.example.com/env' },
    );
    expect(viaEnv.config.runbookBaseUrl).toBe('https://git.example.com/env');
  });

  it('refuses a relative or non-http runbook base URL', () => {
    for (const url of ['docs', '/docs/runbooks.md', 'ftp://example.com/x']) {
      const err = configError(() => load({ alarmEmail: 'a@example.com', runbookBaseUrl: url }));
      expect(err.message).toMatch(/^-c runbookBaseUrl: must be an absolute http\(s\) URL/);
    }
  });

  it('refuses a non-dev environment without a runbook base URL, in one line; dev links relatively', () => {
    const err = configError(() => load({ ...noRunbook, alarmEmail: 'a@example.com' }));
    expect(err.message).toMatch(/^environments\.qa: set runbookBaseUrl/);
    expect(err.message).toContain('S3_INGEST_RUNBOOK_BASE_URL');
    expect(err.message).not.toContain('\n');
    const dev = loadEnvironmentConfig(contextWith('dev', {}, noRunbook), 'dev');
    expect(dev.config.runbookBaseUrl).toBeUndefined();
  });

  it("derives the runbook base URL from package.json's repository when none is given", () => {
    const withRepository = (repository: unknown) =>
      loadEnvironmentConfig(contextWith('qa', { alarms: PAGE }, noRunbook), 'qa', { repository }).config
        .runbookBaseUrl;
    const github = 'https://github.com/acme/s3-ingest/blob/HEAD';
    expect(withRepository('github:acme/s3-ingest')).toBe(github);
    expect(withRepository('acme/s3-ingest')).toBe(github);
    expect(withRepository({ type: 'git', url: 'git+https://github.com/acme/s3-ingest.git' })).toBe(github);
    expect(withRepository({ url: 'https://gitlab.com/acme/s3-ingest' })).toBe(
      'https://gitlab.com/acme/s3-ingest/-/blob/HEAD',
    );
    // An explicit setting wins over the repository.
    expect(
      loadEnvironmentConfig(contextWith('qa', { alarms: PAGE }), 'qa', { repository: 'acme/s3-ingest' })
        .config.runbookBaseUrl,
    ).toBe(TEST_RUNBOOK_BASE_URL);
    // A host whose file URLs are unknown gives nothing to derive from.
    const err = configError(() => withRepository({ url: 'https://git.example.com/acme/s3-ingest.git' }));
    expect(err.message).toMatch(/^environments\.qa: set runbookBaseUrl/);
  });
});
