import { InvalidKeyError } from './errors.js';
import { MAX_SHARDS, shardLabel } from './shard-hash.js';

// The S3 key layout (design.md, "S3 key layout"): `<prefix>t=<tenant>/r=<resource>/id=<id>.json`, or for a
// resource of N > 1 shards `<prefix>t=<tenant>/r=<resource>/s=<shard>/id=<id>.json` (shard-hash.ts).
// This module is the only place keys are made. Every builder validates every part, so a key outside
// `<prefix>t=<tenant>/` cannot be produced: no part may contain `/`, and ids may not contain `..`.

/** Tenant names: lowercase ASCII letters, digits, `_` and `-`, starting with a letter or digit, 1..63 chars. */
export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Resource names: same alphabet and length as tenants. */
export const RESOURCE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Record ids: ASCII letters, digits, `_ . : -`, starting with a letter or digit, 1..128 chars, no `..`. */
export const ID_PATTERN = /^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/** One segment of the optional key prefix (from the connection string): like an id, plus `=`. */
export const PREFIX_SEGMENT_PATTERN = /^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.=-]{0,127}$/;

/** The tenant used when a Database is given none, so every key still sits under some `t=<tenant>/`. */
export const DEFAULT_TENANT = 'default';

const RECORD_SUFFIX = '.json';

function reject(part: 'tenant' | 'resource' | 'id', value: unknown, pattern: RegExp): never {
  if (typeof value !== 'string') throw new InvalidKeyError(part, value, 'must be a string');
  if (part === 'id' && value.includes('..')) throw new InvalidKeyError(part, value, 'must not contain ".."');
  throw new InvalidKeyError(part, value, `must match ${pattern.source}`);
}

export function isValidTenant(value: unknown): value is string {
  return typeof value === 'string' && TENANT_PATTERN.test(value);
}

export function isValidResource(value: unknown): value is string {
  return typeof value === 'string' && RESOURCE_PATTERN.test(value);
}

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/** Throws `InvalidKeyError` (part `tenant`) unless `value` is a valid tenant name. */
export function assertTenant(value: unknown): asserts value is string {
  if (!isValidTenant(value)) reject('tenant', value, TENANT_PATTERN);
}

/** Throws `InvalidKeyError` (part `resource`) unless `value` is a valid resource name. */
export function assertResource(value: unknown): asserts value is string {
  if (!isValidResource(value)) reject('resource', value, RESOURCE_PATTERN);
}

/** Throws `InvalidKeyError` (part `id`) unless `value` is a valid record id. */
export function assertId(value: unknown): asserts value is string {
  if (!isValidId(value)) reject('id', value, ID_PATTERN);
}

/**
 * Validates and normalises the key prefix of a connection string: `''` or `seg/seg/` (leading and
 * trailing slashes dropped, one slash appended). Segments that look like layout segments (`t=`, `r=`,
 * `id=`) are refused so a prefix can never impersonate a tenant.
 */
export function normalizePrefix(prefix: string | undefined): string {
  if (prefix === undefined) return '';
  if (typeof prefix !== 'string') throw new InvalidKeyError('prefix', prefix, 'must be a string');
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  for (const segment of trimmed.split('/')) {
    if (!PREFIX_SEGMENT_PATTERN.test(segment)) {
      throw new InvalidKeyError(
        'prefix',
        prefix,
        `segment ${JSON.stringify(segment)} must match ${PREFIX_SEGMENT_PATTERN.source}`,
      );
    }
    if (/^(t|r|id)=/.test(segment)) {
      throw new InvalidKeyError(
        'prefix',
        prefix,
        `segment ${JSON.stringify(segment)} looks like a layout segment`,
      );
    }
  }
  return `${trimmed}/`;
}

/** `<prefix>t=<tenant>/`: everything a tenant's Database may touch lies under it. */
export function tenantPrefix(tenant: string, prefix = ''): string {
  assertTenant(tenant);
  return `${normalizePrefix(prefix)}t=${tenant}/`;
}

/** `<prefix>t=<tenant>/r=<resource>/`: the listing prefix of one resource. */
export function resourcePrefix(tenant: string, resource: string, prefix = ''): string {
  assertResource(resource);
  return `${tenantPrefix(tenant, prefix)}r=${resource}/`;
}

/**
 * `<prefix>t=<tenant>/r=<resource>/s=<shard>/`: the listing prefix of one shard of a sharded resource
 * (`shard` is an index from `shardOf`, zero-padded by `shardLabel`).
 */
export function shardPrefix(tenant: string, resource: string, shard: number, prefix = ''): string {
  if (!Number.isInteger(shard) || shard < 0 || shard >= MAX_SHARDS)
    throw new InvalidKeyError('shard', shard, `must be an integer in 0..${MAX_SHARDS - 1}`);
  return `${resourcePrefix(tenant, resource, prefix)}s=${shardLabel(shard)}/`;
}

/** `<prefix>t=<tenant>/r=<resource>/id=<id>.json`: the object holding one record of an unsharded resource. */
export function recordKey(tenant: string, resource: string, id: string, prefix = ''): string {
  assertId(id);
  return recordKeyUnder(resourcePrefix(tenant, resource, prefix), id);
}

/** `<listing prefix>id=<id>.json`: the object holding record `id` under a resource or shard prefix. */
export function recordKeyUnder(listingPrefix: string, id: string): string {
  assertId(id);
  return `${listingPrefix}id=${id}${RECORD_SUFFIX}`;
}

/**
 * The id of a listed key under `resourcePrefixValue` (a resource's or a shard's listing prefix), or
 * `undefined` for objects that are not records of this layout (foreign objects in the bucket are skipped,
 * never parsed into records).
 */
export function idFromKey(resourcePrefixValue: string, key: string): string | undefined {
  if (!key.startsWith(`${resourcePrefixValue}id=`) || !key.endsWith(RECORD_SUFFIX)) return undefined;
  const id = key.slice(resourcePrefixValue.length + 3, key.length - RECORD_SUFFIX.length);
  return isValidId(id) ? id : undefined;
}
