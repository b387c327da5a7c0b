import { bucketNameProblem } from '../db/connection-string.js';
import { InvalidSchemaError } from '../db/errors.js';
import { isValidResource } from '../db/keys.js';
import { type JsonSchema, SchemaRegistry } from '../db/schema.js';
import { isValidShardCount, MAX_SHARDS } from '../db/shard-hash.js';
import { ConfigError } from './errors.js';
import { parseJsonObjectSetting } from './json-object-setting.js';
import { parseSourceTenants, type TenantAllowList } from './source-tenants.js';

/** A resource's JSON Schema (`{}` accepts any object). */
export type ResourceSchema = Readonly<Record<string, unknown>>;

/** The environment the handler and the local runner read, parsed once at cold start. */
export interface IngestConfig {
  /** `BUCKET_NAME` (required): the bucket holding every tenant's records; S3's bucket-naming rules apply. */
  readonly bucketName: string;
  /** `DLQ_URL` (required): where permanently invalid messages go, with their reason. */
  readonly dlqUrl: string;
  /**
   * `SEMAPHORE_TABLE` (optional): the DynamoDB table of the prefixes' write schedules (docs/fleet-cap.md).
   * Unset: no fleet-wide cap; each invocation only bounds itself (`POOL_CONCURRENCY`), so concurrent invocations can
   * together exceed `S3_PREFIX_WRITE_RATE` and meet S3 SlowDown, which the pools then retry.
   */
  readonly semaphoreTable?: string;
  /**
   * `RESOURCES` (required): JSON object, resource name -> JSON Schema, each compiled at load (a bad one
   * throws `ConfigError` with key `RESOURCES.<resource>`). A null-prototype map.
   */
  readonly resources: Readonly<Record<string, ResourceSchema>>;
  /**
   * `RESOURCE_SHARDS` (optional): JSON object, resource name -> shard count (an integer in 1..4096), for the
   * resources whose records spread over several S3 prefixes (`t=<tenant>/r=<resource>/s=<shard>/`,
   * docs/decisions/sharded-keys.md). A resource it does not name has 1 shard (the unsharded layout). Every
   * name must be declared in `RESOURCES`; a bad entry throws `ConfigError` with key `RESOURCE_SHARDS.<resource>`.
   * Every container of the fleet must declare the same counts: a resource read with another count reads as empty.
   * @default {} (every resource unsharded)
   * @example '{"events":16}'
   */
  readonly resourceShards?: Readonly<Record<string, number>>;
  /** `POOL_CONCURRENCY`: in-flight S3 writes per invocation, split over tenants. Default 64, int >= 1. */
  readonly poolConcurrency: number;
  /** `S3_PREFIX_WRITE_RATE`: S3 PUT/DELETE per second one prefix sustains. Default 3500, int >= 1. */
  readonly s3PrefixWriteRate: number;
  /** `AWS_REGION`, when set; otherwise the SDK's own resolution applies. */
  readonly region?: string;
  /**
   * Endpoint overrides, the SDK's conventions: `AWS_ENDPOINT_URL_S3` / `_SQS` / `_DYNAMODB` win over
   * `AWS_ENDPOINT_URL`; `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true` ignores them all. Undefined: default.
   */
  readonly endpoints: {
    readonly s3?: string;
    readonly sqs?: string;
    readonly dynamodb?: string;
  };
  /** True when an S3 endpoint override is set (emulators and most S3-compatible stores need path style). */
  readonly s3ForcePathStyle: boolean;
  /**
   * `DEADLINE_MARGIN_MS`: stop starting writes when less time than this remains. Default 5000, int in
   * `WRITE_TIMEOUT_MS..450000`, and at most half of `FUNCTION_TIMEOUT_SECONDS` when that is set.
   */
  readonly deadlineMarginMs: number;
  /** `WRITE_TIMEOUT_MS`: one S3 write attempt's timeout. Default 3000, int in 1..450000. */
  readonly writeTimeoutMs: number;
  /** `WRITE_RETRIES`: retries of a retryable write failure (SlowDown, 5xx, timeout). Default 3, int >= 0. */
  readonly writeRetries: number;
  /**
   * `FUNCTION_TIMEOUT_SECONDS` (optional, set by the stack): the function's timeout, 1..900. Only checked
   * against `DEADLINE_MARGIN_MS` (`minimumTimeoutSeconds`); each invocation reads its own remaining time.
   */
  readonly functionTimeoutSeconds?: number;
  /** `TENANT_CACHE_SIZE`: per-tenant Databases kept warm across invocations (LRU). Default 100, int >= 1. */
  readonly tenantCacheSize: number;
  /**
   * `SOURCE_TENANTS` (optional): JSON object, source queue ARN -> the tenants that queue's producer may
   * write (exact names or prefix patterns `acme-*`). Set: a message whose tenant its source may not write,
   * or from a source not listed, is dead-lettered (`tenant-not-allowed`, `unknown-source`) before any
   * write. Unset: single-queue mode, any tenant from any source.
   * @example '{"arn:aws:sqs:eu-west-1:123456789012:ingest-billing":["billing","billing-*"]}'
   */
  readonly sourceTenants?: ReadonlyMap<string, TenantAllowList>;
}

/** Defaults of the optional keys, exported so docs and tests cannot drift from the code. */
export const CONFIG_DEFAULTS = {
  POOL_CONCURRENCY: 64,
  S3_PREFIX_WRITE_RATE: 3500,
  DEADLINE_MARGIN_MS: 5000,
  WRITE_TIMEOUT_MS: 3000,
  WRITE_RETRIES: 3,
  TENANT_CACHE_SIZE: 100,
} as const;

/** Lambda's longest function timeout (15 minutes). */
const MAX_FUNCTION_TIMEOUT_SECONDS = 900;

/** Upper bounds of the deadline knobs, checked at cold start. */
export const CONFIG_MAXIMUMS = {
  /** Half of Lambda's longest timeout: a margin longer than the work it leaves fits no function. */
  DEADLINE_MARGIN_MS: (MAX_FUNCTION_TIMEOUT_SECONDS * 1000) / 2,
  /** A write attempt must fit in the margin, so its bound is the margin's. */
  WRITE_TIMEOUT_MS: (MAX_FUNCTION_TIMEOUT_SECONDS * 1000) / 2,
} as const;

/**
 * The shortest function timeout that works with a deadline margin: twice the margin, so at least half of
 * every invocation goes to writes. After the cutoff the margin is spent on rate reports, dead letters and
 * the response; a timeout at or below the margin starts every invocation past its cutoff and writes
 * nothing. The stack checks `timeoutSeconds` with this at synth, `loadConfig` at cold start.
 * @example minimumTimeoutSeconds(5000) // 10
 */
export function minimumTimeoutSeconds(deadlineMarginMs: number = CONFIG_DEFAULTS.DEADLINE_MARGIN_MS): number {
  return Math.max(1, Math.ceil((2 * deadlineMarginMs) / 1000));
}

type Env = Readonly<Record<string, string | undefined>>;

/** Unset and blank are the same: CDK and shells often pass `''` for "not configured". */
function optional(env: Env, key: string): string | undefined {
  const value = env[key]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function required(env: Env, key: string): string {
  const value = optional(env, key);
  if (value === undefined) throw new ConfigError(key, 'required');
  return value;
}

function bucketName(env: Env): string {
  const name = required(env, 'BUCKET_NAME');
  const problem = bucketNameProblem(name);
  if (problem !== undefined) throw new ConfigError('BUCKET_NAME', `${JSON.stringify(name)} ${problem}`);
  return name;
}

function integer(
  env: Env,
  key: keyof typeof CONFIG_DEFAULTS,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  return integerOr(env, key, CONFIG_DEFAULTS[key], min, max);
}

/** An integer key in `min..max`, or `fallback` when unset. */
function integerOr<T>(env: Env, key: string, fallback: T, min: number, max: number): number | T {
  const text = optional(env, key);
  if (text === undefined) return fallback;
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `>= ${min} and <= ${max}`;
  if (!/^\d+$/.test(text))
    throw new ConfigError(key, `expected an integer ${range}, got ${JSON.stringify(text)}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(key, `expected an integer ${range}, got ${text}`);
  }
  return value;
}

function endpoint(env: Env, key: string): string | undefined {
  const value = optional(env, key);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(key, `expected an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(key, `expected an http(s) URL, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Data is always a JSON object: a schema whose `type` leaves out `object` would refuse every write. */
function acceptsObjects(type: unknown): boolean {
  if (type === undefined) return true;
  return Array.isArray(type) ? type.includes('object') : type === 'object';
}

/**
 * Compiles one resource's schema with the very registry the Databases use. Ajv caches validators by schema
 * object in its one per-process instance, so each tenant's `createResource` of this same object reuses the
 * validator compiled here: a schema that loads is a schema every write can use, and a bad one fails the
 * cold start, naming `RESOURCES.<resource>`, instead of blocking every tenant at its first write.
 */
function compileSchema(registry: SchemaRegistry, resource: string, schema: ResourceSchema): void {
  const key = `RESOURCES.${resource}`;
  try {
    registry.compile(resource, schema as JsonSchema);
  } catch (err) {
    if (err instanceof InvalidSchemaError) throw new ConfigError(key, err.message);
    throw err;
  }
  if (!acceptsObjects(schema.type)) {
    throw new ConfigError(
      key,
      `"type" ${JSON.stringify(schema.type)} refuses objects, and every record's data is an object`,
    );
  }
}

function resources(env: Env): Record<string, ResourceSchema> {
  const parsed = parseJsonObjectSetting(
    'RESOURCES',
    required(env, 'RESOURCES'),
    'resource name -> JSON Schema',
  );
  const names = Object.keys(parsed);
  if (names.length === 0)
    throw new ConfigError('RESOURCES', 'declares no resource: every message would fail');
  const out: Record<string, ResourceSchema> = Object.create(null);
  const registry = new SchemaRegistry();
  for (const name of names) {
    if (!isValidResource(name)) {
      throw new ConfigError(
        'RESOURCES',
        `resource name ${JSON.stringify(name)} must match ^[a-z0-9][a-z0-9_-]{0,62}$`,
      );
    }
    const schema = parsed[name];
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      throw new ConfigError('RESOURCES', `${name}: expected a JSON Schema object ({} for schemaless)`);
    }
    out[name] = schema as ResourceSchema;
    compileSchema(registry, name, out[name]);
  }
  return out;
}

/**
 * `RESOURCE_SHARDS`: the shard counts other than 1, a null-prototype map (empty when unset). A count of 1 is
 * accepted and dropped: it is the default.
 */
function resourceShards(
  env: Env,
  declared: Readonly<Record<string, ResourceSchema>>,
): Record<string, number> {
  const out: Record<string, number> = Object.create(null);
  const text = optional(env, 'RESOURCE_SHARDS');
  if (text === undefined) return out;
  const parsed = parseJsonObjectSetting('RESOURCE_SHARDS', text, 'resource name -> shard count');
  for (const [name, shards] of Object.entries(parsed)) {
    const key = `RESOURCE_SHARDS.${name}`;
    if (!Object.hasOwn(declared, name)) throw new ConfigError(key, 'names no resource declared in RESOURCES');
    if (!isValidShardCount(shards)) {
      throw new ConfigError(key, `expected an integer in 1..${MAX_SHARDS}, got ${JSON.stringify(shards)}`);
    }
    if (shards > 1) out[name] = shards;
  }
  return out;
}

/**
 * Parses the ingestion settings from a `process.env`-shaped object, once, at cold start. Throws
 * `ConfigError` naming the first bad key. Blank values count as unset.
 */
export function loadConfig(env: Env): IngestConfig {
  const bucket = bucketName(env);
  const dlqUrl = required(env, 'DLQ_URL');
  endpoint(env, 'DLQ_URL');
  const semaphoreTable = optional(env, 'SEMAPHORE_TABLE');
  const resourceMap = resources(env);
  const shardMap = resourceShards(env, resourceMap);
  const region = optional(env, 'AWS_REGION');
  const sourceTenantsText = optional(env, 'SOURCE_TENANTS');

  const ignoreEndpoints = optional(env, 'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS')?.toLowerCase() === 'true';
  const shared = ignoreEndpoints ? undefined : endpoint(env, 'AWS_ENDPOINT_URL');
  const perService = (key: string) => (ignoreEndpoints ? undefined : (endpoint(env, key) ?? shared));
  const endpoints = {
    s3: perService('AWS_ENDPOINT_URL_S3'),
    sqs: perService('AWS_ENDPOINT_URL_SQS'),
    dynamodb: perService('AWS_ENDPOINT_URL_DYNAMODB'),
  };

  const writeTimeoutMs = integer(env, 'WRITE_TIMEOUT_MS', 1, CONFIG_MAXIMUMS.WRITE_TIMEOUT_MS);
  const deadlineMarginMs = integer(env, 'DEADLINE_MARGIN_MS', 0, CONFIG_MAXIMUMS.DEADLINE_MARGIN_MS);
  if (deadlineMarginMs < writeTimeoutMs) {
    // A write started just before the margin could otherwise outlive the invocation and be cut mid-flight.
    throw new ConfigError(
      'DEADLINE_MARGIN_MS',
      `must be >= WRITE_TIMEOUT_MS (${writeTimeoutMs}), got ${deadlineMarginMs}`,
    );
  }
  const functionTimeoutSeconds = integerOr(
    env,
    'FUNCTION_TIMEOUT_SECONDS',
    undefined,
    1,
    MAX_FUNCTION_TIMEOUT_SECONDS,
  );
  if (
    functionTimeoutSeconds !== undefined &&
    functionTimeoutSeconds < minimumTimeoutSeconds(deadlineMarginMs)
  ) {
    throw new ConfigError(
      'DEADLINE_MARGIN_MS',
      `${deadlineMarginMs} ms needs FUNCTION_TIMEOUT_SECONDS >= ${minimumTimeoutSeconds(deadlineMarginMs)} (twice the margin), got ${functionTimeoutSeconds}: lower DEADLINE_MARGIN_MS (and WRITE_TIMEOUT_MS) or raise the function timeout`,
    );
  }

  return {
    bucketName: bucket,
    dlqUrl,
    ...(semaphoreTable === undefined ? {} : { semaphoreTable }),
    resources: resourceMap,
    ...(Object.keys(shardMap).length === 0 ? {} : { resourceShards: shardMap }),
    poolConcurrency: integer(env, 'POOL_CONCURRENCY', 1),
    s3PrefixWriteRate: integer(env, 'S3_PREFIX_WRITE_RATE', 1),
    ...(region === undefined ? {} : { region }),
    endpoints,
    s3ForcePathStyle: endpoints.s3 !== undefined,
    deadlineMarginMs,
    writeTimeoutMs,
    writeRetries: integer(env, 'WRITE_RETRIES', 0),
    tenantCacheSize: integer(env, 'TENANT_CACHE_SIZE', 1),
    ...(functionTimeoutSeconds === undefined ? {} : { functionTimeoutSeconds }),
    ...(sourceTenantsText === undefined ? {} : { sourceTenants: parseSourceTenants(sourceTenantsText) }),
  };
}
