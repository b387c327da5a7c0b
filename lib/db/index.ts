// Public API of the document store (re-exported from lib/index.ts).

export * from './errors.js';
export {
  assertId,
  assertResource,
  assertTenant,
  DEFAULT_TENANT,
  ID_PATTERN,
  idFromKey,
  isValidId,
  isValidResource,
  isValidTenant,
  normalizePrefix,
  PREFIX_SEGMENT_PATTERN,
  RESOURCE_PATTERN,
  recordKey,
  resourcePrefix,
  TENANT_PATTERN,
  tenantPrefix,
} from './keys.js';
