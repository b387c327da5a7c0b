import { S3IngestError } from '../../../errors/index.js';
import { type TenantAllowList, tenantAllowed } from '../../source-tenants.js';

/**
 * A message names a tenant its source queue may not write (`tenant-not-allowed`), or comes from a queue
 * bound to no tenants at all (`unknown-source`). Permanent: the source is set by SQS, not the producer.
 */
export class TenantNotAllowedError extends S3IngestError {
  override readonly name = 'TenantNotAllowedError';

  constructor(
    readonly reason: 'tenant-not-allowed' | 'unknown-source',
    readonly source: string,
    readonly tenant: string,
  ) {
    super(
      reason === 'unknown-source'
        ? `source queue ${source} is bound to no tenants (SOURCE_TENANTS); refused, fail closed`
        : `source queue ${source} may not write tenant ${tenant}`,
    );
  }
}

/**
 * Tenant-bound producers: each source queue (`eventSourceARN`, stamped by Lambda from the queue
 * it polled, never by the producer) maps to the tenants it may write. The `tenant` in a body is a claim;
 * the queue a message came through is not, since only that producer's principals may send to it.
 */
export class SourceBinding {
  readonly #tenantsOf: ReadonlyMap<string, TenantAllowList>;

  constructor(tenantsOf: ReadonlyMap<string, TenantAllowList>) {
    this.#tenantsOf = tenantsOf;
  }

  /** `undefined` when `source` may write `tenant`; otherwise the refusal. Unknown sources are refused. */
  check(source: string, tenant: string): TenantNotAllowedError | undefined {
    const allowed = this.#tenantsOf.get(source);
    if (allowed === undefined) return new TenantNotAllowedError('unknown-source', source, tenant);
    return tenantAllowed(allowed, tenant)
      ? undefined
      : new TenantNotAllowedError('tenant-not-allowed', source, tenant);
  }
}
