import { isValidTenant } from '../db/keys.js';
import { ConfigError } from './errors.js';

/**
 * Which tenants one producer may write: exact tenant names, and prefix patterns `<prefix>*` that match
 * every tenant starting with `<prefix>` and at least one character more (`acme-*` matches `acme-eu`, not
 * `acme-` nor `acme`). Tenants are compared as the exact strings the key builder accepts
 * (`^[a-z0-9][a-z0-9_-]{0,62}$`), so case, Unicode look-alikes and padding never match.
 */
export interface TenantAllowList {
  readonly exact: ReadonlySet<string>;
  readonly prefixes: readonly string[];
}

/** A tenant prefix: what a tenant may start with, one character short of the longest tenant. */
const PREFIX_PATTERN = /^([a-z0-9][a-z0-9_-]{0,61})\*$/;
/**
 * An SQS queue ARN, as Lambda stamps it on every record (`eventSourceARN`): SQS allows queue names of up to
 * 80 characters, a FIFO queue's `.fifo` suffix included.
 */
const QUEUE_ARN_PATTERN =
  /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$/;

/** Whether `tenant` is on the list. A value that is not a valid tenant name never is. */
export function tenantAllowed(list: TenantAllowList, tenant: string): boolean {
  if (!isValidTenant(tenant)) return false;
  if (list.exact.has(tenant)) return true;
  return list.prefixes.some((prefix) => tenant.length > prefix.length && tenant.startsWith(prefix));
}

/** Parses one pattern list; throws `ConfigError` naming `key` and the bad entry. */
export function parseTenantPatterns(key: string, value: unknown): TenantAllowList {
  if (!Array.isArray(value) || value.length === 0) {
    throw new ConfigError(key, 'expected a non-empty array of tenant names or prefix patterns ("acme-*")');
  }
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const pattern of value) {
    if (typeof pattern !== 'string') {
      throw new ConfigError(key, `expected strings, got ${JSON.stringify(pattern)}`);
    }
    const prefix = PREFIX_PATTERN.exec(pattern)?.[1];
    if (prefix !== undefined) prefixes.push(prefix);
    else if (isValidTenant(pattern)) exact.add(pattern);
    else {
      throw new ConfigError(
        key,
        `${JSON.stringify(pattern)} is neither a tenant name (^[a-z0-9][a-z0-9_-]{0,62}$) nor a prefix pattern such as "acme-*"`,
      );
    }
  }
  return { exact, prefixes };
}

/**
 * Parses `SOURCE_TENANTS`: a JSON object, source queue ARN -> tenant patterns. Throws `ConfigError` with
 * key `SOURCE_TENANTS` (the whole value) or `SOURCE_TENANTS.<arn>` (one entry).
 */
export function parseSourceTenants(text: string): ReadonlyMap<string, TenantAllowList> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError('SOURCE_TENANTS', `not JSON (${(cause as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('SOURCE_TENANTS', 'expected a JSON object: source queue ARN -> tenant patterns');
  }
  const entries = Object.entries(parsed);
  if (entries.length === 0) {
    throw new ConfigError(
      'SOURCE_TENANTS',
      'binds no source: every message would be refused (unset it instead)',
    );
  }
  const map = new Map<string, TenantAllowList>();
  for (const [arn, patterns] of entries) {
    if (!QUEUE_ARN_PATTERN.test(arn)) {
      throw new ConfigError(
        `SOURCE_TENANTS.${arn}`,
        'expected an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>)',
      );
    }
    map.set(arn, parseTenantPatterns(`SOURCE_TENANTS.${arn}`, patterns));
  }
  return map;
}
