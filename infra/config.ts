import { z } from 'zod';
import { MAX_SHARDS } from '../lib/db/shard-hash.js';
import { CONFIG_DEFAULTS, minimumTimeoutSeconds } from '../lib/ingest/config.js';
import { ConfigError } from '../lib/ingest/errors.js';
import { parseTenantPatterns } from '../lib/ingest/source-tenants.js';
import {
  applyDeploySettings,
  baseUrl,
  missingDeploySettings,
  missingDeploySettingsMessage,
  runbookBaseFromRepository,
  topicArn,
} from './deploy-settings.js';
import { EnvironmentConfigError } from './environment-config-error.js';

export { EnvironmentConfigError };

/** Context key holding the per-environment blocks (`cdk.json` -> `context.environments`). */
export const ENVIRONMENTS_CONTEXT_KEY = 'environments';
/** Context key holding values every environment inherits unless it overrides them. */
export const DEFAULTS_CONTEXT_KEY = 'environmentDefaults';
/** Context key selecting the environment (`cdk synth -c env=staging`). */
export const ENV_CONTEXT_KEY = 'env';
export const DEFAULT_ENVIRONMENT = 'dev';

// CloudWatch Logs accepts only these retention periods (days).
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

// Lambda caps all environment variables together at 4 KB; leave room for the others.
const MAX_RESOURCES_ENV_BYTES = 3072;
// RESOURCES and SOURCE_TENANTS together; the other variables take well under 512 bytes.
const MAX_BOUND_ENV_BYTES = 3584;
// The longest queue ARN SOURCE_TENANTS can carry: arn:aws-us-gov:sqs:<region>:<12 digits>:<80-char name>.
const QUEUE_ARN_BYTES = 128;
// SQS FIFO event sources: at most 10 records per batch, no batching window (Lambda's SQS parameters).
const FIFO_MAX_BATCH_SIZE = 10;

/** Who may send to a producer's queue: an account id, or an IAM role / user ARN (or an account root). */
const principal = z
  .string()
  .regex(
    /^(\d{12}|arn:aws[a-z-]*:iam::\d{12}:(root|role\/[\w+=,.@/-]{1,512}|user\/[\w+=,.@/-]{1,512}))$/,
    'must be a 12-digit account id or an IAM role/user ARN',
  );

/** Tenant patterns, checked by the same parser the function runs on SOURCE_TENANTS at cold start. */
const tenantPatterns = z.array(z.string()).superRefine((patterns, ctx) => {
  try {
    parseTenantPatterns('tenants', patterns);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    ctx.addIssue({ code: 'custom', message: error.detail });
  }
});

const producerSchema = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'must match ^[a-z][a-z0-9-]{0,39}$'),
  tenants: tenantPatterns,
  principals: z.array(principal).min(1).optional(),
});

// Same rule as the key builder in lib/db: resource names become S3 key segments.
const resourceName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'must match ^[a-z0-9][a-z0-9_-]{0,62}$');
const positiveInt = z.int().min(1);

const retentionSchema = z.strictObject({
  queueDays: z.int().min(1).max(13),
  dlqDays: z.int().min(2).max(14),
  logDays: z.union(LOG_RETENTION_DAYS.map((d) => z.literal(d))),
  accessLogDays: positiveInt,
  noncurrentVersionDays: positiveInt,
  /**
   * Days a tombstone or pending partial (lib/db README) is kept before the bucket's lifecycle rule expires
   * it. Must be longer than `queueDays + dlqDays`: after that no older write to the record can still arrive.
   * Default: `queueDays + dlqDays + 7` (`tombstoneHorizonDays`).
   */
  tombstoneDays: z.int().min(2).max(3650).optional(),
});

/** The tombstone horizon of an environment: its `retention.tombstoneDays`, else queue + DLQ retention + 7. */
export function tombstoneHorizonDays(retention: {
  readonly queueDays: number;
  readonly dlqDays: number;
  readonly tombstoneDays?: number | undefined;
}): number {
  return retention.tombstoneDays ?? retention.queueDays + retention.dlqDays + 7;
}

const percent = z.number().gt(0).max(100);

const alarmsSchema = z.strictObject({
  oldestMessageAgeSeconds: positiveInt,
  functionErrors: positiveInt,
  functionThrottles: positiveInt,
  slowDownPerMinute: positiveInt,
  poolErrorRatePercent: percent,
  recordsFailedPercent: percent,
  durationTimeoutPercent: percent,
  semaphoreErrorsPerMinute: positiveInt,
  rejectedPerMinute: positiveInt,
  expiryWarningHours: z
    .int()
    .min(1)
    .max(24 * 13),
  evaluationPeriods: z.int().min(1).max(60),
  email: z.email().optional(),
  topicArn: topicArn.optional(),
  ticketEmail: z.email().optional(),
  ticketTopicArn: topicArn.optional(),
});

const environmentSchema = z
  .strictObject({
    account: z
      .string()
      .regex(/^\d{12}$/, 'must be a 12-digit AWS account id')
      .optional(),
    region: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as eu-west-1')
      .optional(),
    serviceName: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'must be 1-64 of [A-Za-z0-9_-]'),
    metricsNamespace: z.string().regex(/^[A-Za-z0-9/_.#:-]{1,255}$/, 'must be a CloudWatch namespace'),
    logLevel: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT']),
    memoryMb: z.int().min(128).max(10240),
    timeoutSeconds: z.int().min(1).max(900),
    batchSize: z.int().min(1).max(10000),
    maxBatchingWindowSeconds: z.int().min(0).max(300),
    maxConcurrency: z.int().min(2).max(1000),
    reservedConcurrency: z.int().min(2),
    poolConcurrency: z.int().min(1).max(4096),
    s3PrefixWriteRate: positiveInt,
    maxReceiveCount: z.int().min(5).max(1000),
    ingestionEnabled: z.boolean(),
    /**
     * Where the repository's files are read, e.g. `https://github.com/<org>/<repo>/blob/main`: alarm
     * descriptions link `<runbookBaseUrl>/docs/runbooks.md#<alarm>`. Unset: package.json's repository,
     * else (dev only) a relative link.
     */
    runbookBaseUrl: baseUrl.optional(),
    resources: z
      .record(resourceName, z.record(z.string(), z.unknown()))
      .refine((r) => Object.keys(r).length > 0, 'declare at least one resource'),
    /**
     * `RESOURCE_SHARDS`: resource name -> shard count (1..4096) for the resources whose records spread over
     * several S3 prefixes (docs/decisions/sharded-keys.md). Fixed for a resource's life: a deployed
     * resource changes it only offline (`copyLayout`). Unset: every resource unsharded.
     */
    resourceShards: z.record(resourceName, z.int().min(1).max(MAX_SHARDS)).optional(),
    versioning: z.boolean(),
    removalPolicy: z.enum(['retain', 'destroy']),
    retention: retentionSchema,
    alarms: alarmsSchema,
    fifo: z.boolean().default(false),
    producers: z.array(producerSchema).min(1).max(20).optional(),
  })
  .superRefine((c, ctx) => {
    // Every event source (one per producer queue) may drive maxConcurrency invocations at once; the sum
    // must fit the reserved concurrency, or Lambda throttles batches and each throttle burns a receive.
    const sources = c.producers?.length ?? 1;
    if (c.reservedConcurrency < c.maxConcurrency * sources) {
      ctx.addIssue({
        code: 'custom',
        path: ['reservedConcurrency'],
        message:
          sources === 1
            ? `must be >= maxConcurrency (${c.maxConcurrency}), or the event source is throttled below its own cap`
            : `must be >= maxConcurrency x event sources (${c.maxConcurrency} x ${sources} = ${c.maxConcurrency * sources}): one event source per producer queue, each up to maxConcurrency invocations, and a throttled batch burns a receive toward the DLQ`,
      });
    }
    const minimumTimeout = minimumTimeoutSeconds(CONFIG_DEFAULTS.DEADLINE_MARGIN_MS);
    if (c.timeoutSeconds < minimumTimeout) {
      ctx.addIssue({
        code: 'custom',
        path: ['timeoutSeconds'],
        message: `must be >= ${minimumTimeout}: twice the function's deadline margin (DEADLINE_MARGIN_MS, ${CONFIG_DEFAULTS.DEADLINE_MARGIN_MS} ms), or invocations spend more time settling than writing (at or below the margin they write nothing)`,
      });
    }
    if (c.batchSize > 10 && c.maxBatchingWindowSeconds < 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxBatchingWindowSeconds'],
        message: 'must be >= 1 when batchSize > 10 (SQS event source rule)',
      });
    }
    for (const name of Object.keys(c.resourceShards ?? {})) {
      if (!Object.hasOwn(c.resources, name))
        ctx.addIssue({
          code: 'custom',
          path: ['resourceShards', name],
          message: 'names no resource declared in resources',
        });
    }
    const resourcesBytes =
      Buffer.byteLength(JSON.stringify(c.resources)) +
      Buffer.byteLength(JSON.stringify(c.resourceShards ?? {}));
    if (resourcesBytes > MAX_RESOURCES_ENV_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: ['resources'],
        message: `serializes to ${resourcesBytes} bytes (with resourceShards); RESOURCES and RESOURCE_SHARDS must stay under ${MAX_RESOURCES_ENV_BYTES} (Lambda allows 4 KB of environment in total)`,
      });
    }
    if (c.fifo && c.batchSize > FIFO_MAX_BATCH_SIZE) {
      ctx.addIssue({
        code: 'custom',
        path: ['batchSize'],
        message: `must be <= ${FIFO_MAX_BATCH_SIZE} with fifo (SQS FIFO event source rule)`,
      });
    }
    if (c.fifo && c.maxBatchingWindowSeconds !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxBatchingWindowSeconds'],
        message: 'must be 0 with fifo (FIFO event sources have no batching window)',
      });
    }
    if (c.producers !== undefined) {
      const names = c.producers.map((p) => p.name);
      names.forEach((name, i) => {
        if (names.indexOf(name) !== i)
          ctx.addIssue({
            code: 'custom',
            path: ['producers', i, 'name'],
            message: `duplicate producer ${name}`,
          });
      });
      const bound = Object.fromEntries(
        c.producers.map((p) => ['x'.repeat(QUEUE_ARN_BYTES) + p.name, p.tenants]),
      );
      const bytes = Buffer.byteLength(JSON.stringify(c.resources)) + Buffer.byteLength(JSON.stringify(bound));
      if (bytes > MAX_BOUND_ENV_BYTES) {
        ctx.addIssue({
          code: 'custom',
          path: ['producers'],
          message: `RESOURCES and SOURCE_TENANTS may take up to ${bytes} bytes together; keep them under ${MAX_BOUND_ENV_BYTES} (Lambda allows 4 KB of environment in total): use prefix patterns`,
        });
      }
    }
    if (c.alarms.expiryWarningHours >= c.retention.dlqDays * 24) {
      ctx.addIssue({
        code: 'custom',
        path: ['alarms', 'expiryWarningHours'],
        message: `must be shorter than retention.dlqDays (${c.retention.dlqDays} days), or the expiry alarms fire at once`,
      });
    }
    if (
      c.retention.tombstoneDays !== undefined &&
      c.retention.tombstoneDays <= c.retention.queueDays + c.retention.dlqDays
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['retention', 'tombstoneDays'],
        message: `must be longer than retention.queueDays + retention.dlqDays (${c.retention.queueDays + c.retention.dlqDays}): an older write arriving after its tombstone expired would resurrect the record`,
      });
    }
    if (c.retention.dlqDays <= c.retention.queueDays) {
      ctx.addIssue({
        code: 'custom',
        path: ['retention', 'dlqDays'],
        message: `must be longer than retention.queueDays (${c.retention.queueDays}): a redriven message keeps its original enqueue time`,
      });
    }
  });

/** One environment's settings, as read from `cdk.json` (see infra/README.md for each key). */
export type EnvironmentConfig = z.infer<typeof environmentSchema>;
/** One tenant-bound producer: its name, the tenants it may write, who may send to its queue. */
export type ProducerConfig = z.infer<typeof producerSchema>;

/** A validated environment plus its name. */
export interface ResolvedEnvironment {
  readonly name: string;
  readonly config: EnvironmentConfig;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Nested blocks (retention, alarms) merge key by key so an environment overrides one threshold without
// restating the rest; `resources` and `resourceShards` are replaced whole, since merging two resource maps
// would be a surprise (a default's shard count for a resource the environment does not declare).
function mergeDefaults(
  defaults: Record<string, unknown>,
  env: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(env)) {
    const base = merged[key];
    merged[key] =
      key !== 'resources' && key !== 'resourceShards' && isPlainObject(base) && isPlainObject(value)
        ? { ...base, ...value }
        : value;
  }
  return merged;
}

function formatIssue(envName: string, issue: z.core.$ZodIssue): string {
  const path = [ENVIRONMENTS_CONTEXT_KEY, envName, ...issue.path.map(String)].join('.');
  if (issue.code === 'unrecognized_keys') {
    return `${path}: unknown key(s) ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
  }
  return `${path}: ${issue.message}`;
}

/** What a deployment adds to cdk.json. */
export interface DeploymentInputs {
  /**
   * Environment variables read for the deployment settings (`S3_INGEST_ALARM_EMAIL`, ...; see
   * `DEPLOY_SETTINGS`). @default {} (`buildApp` passes `process.env`)
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** package.json's `repository`: the runbook base URL when none is set. @default undefined */
  readonly repository?: unknown;
}

/**
 * Reads and validates one environment from CDK context (`tryGetContext`-shaped lookup), with the
 * deployment settings (alarm destinations, runbook base URL) given by context or environment variable.
 * Throws `EnvironmentConfigError` naming every bad key as `environments.<env>.<key>` (or `-c <key>`, or the
 * variable), and, outside dev, one line naming every deployment setting still missing.
 */
export function loadEnvironmentConfig(
  getContext: (key: string) => unknown,
  envName: string = (getContext(ENV_CONTEXT_KEY) as string | undefined) ?? DEFAULT_ENVIRONMENT,
  inputs: DeploymentInputs = {},
): ResolvedEnvironment {
  const environments = getContext(ENVIRONMENTS_CONTEXT_KEY);
  if (!isPlainObject(environments)) {
    throw new EnvironmentConfigError(
      `context '${ENVIRONMENTS_CONTEXT_KEY}' is missing or not an object (expected in cdk.json)`,
    );
  }
  const block = environments[envName];
  if (!isPlainObject(block)) {
    const known = Object.keys(environments).join(', ');
    throw new EnvironmentConfigError(
      `${ENVIRONMENTS_CONTEXT_KEY}.${envName}: unknown environment (known: ${known}); select one with -c env=<name>`,
    );
  }
  const defaults = getContext(DEFAULTS_CONTEXT_KEY) ?? {};
  if (!isPlainObject(defaults)) {
    throw new EnvironmentConfigError(`context '${DEFAULTS_CONTEXT_KEY}' must be an object`);
  }
  const merged = applyDeploySettings(mergeDefaults(defaults, block), getContext, inputs.env ?? {});
  merged.runbookBaseUrl ??= runbookBaseFromRepository(inputs.repository);
  const parsed = environmentSchema.safeParse(merged);
  if (!parsed.success) {
    throw new EnvironmentConfigError(parsed.error.issues.map((i) => formatIssue(envName, i)).join('\n'));
  }
  if (parsed.data.removalPolicy === 'destroy' && envName !== DEFAULT_ENVIRONMENT) {
    throw new EnvironmentConfigError(
      `${ENVIRONMENTS_CONTEXT_KEY}.${envName}.removalPolicy: only '${DEFAULT_ENVIRONMENT}' may destroy data; use 'retain'`,
    );
  }
  const missing = missingDeploySettings(parsed.data);
  if (envName !== DEFAULT_ENVIRONMENT && missing.length > 0) {
    throw new EnvironmentConfigError(
      missingDeploySettingsMessage(`${ENVIRONMENTS_CONTEXT_KEY}.${envName}`, envName, missing),
    );
  }
  return { name: envName, config: parsed.data };
}
