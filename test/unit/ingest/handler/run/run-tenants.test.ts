// runTenants, the run stage: a tenant that cannot run (its Database cannot be opened, its permits cannot be
// had, its run hits a bug of ours) is redelivered with the right cause and logged with its name, while the
// other tenants are written. Issue 14's mutation testing of run-tenants.ts found these paths untested.
import type { Logger } from '@aws-lambda-powertools/logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../../../lib/db/database.js';
import { MemoryBucket, MemoryObjectStore } from '../../../../../lib/db/memory-object-store.js';
import { systemClock } from '../../../../../lib/ingest/handler/clock.js';
import { InvocationDeadline } from '../../../../../lib/ingest/handler/invocation-deadline.js';
import { planBatch } from '../../../../../lib/ingest/handler/plan/plan-batch.js';
import { runTenants } from '../../../../../lib/ingest/handler/run/run-tenants.js';
import { TenantDatabases } from '../../../../../lib/ingest/handler/run/tenant-databases.js';
import {
  type SemaphoreFactory,
  TenantPermits,
} from '../../../../../lib/ingest/handler/run/tenant-permits.js';
import { InvocationMetrics } from '../../../../../lib/ingest/handler/settle/invocation-metrics.js';
import { OutcomeLedger } from '../../../../../lib/ingest/handler/settle/outcome-ledger.js';
import { ConcurrencyBudget } from '../../../../../lib/pool/concurrency-budget.js';
import { MemorySemaphore } from '../../../../../lib/semaphore/memory-semaphore.js';
import { body, sqsRecord, testConfig } from '../support.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const fn of cleanup.splice(0)) await fn();
});

function recordingLogger() {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) => {
      lines.push({ level, message, fields });
    };
  return { logger: { warn: at('warn'), error: at('error'), info: at('info') } as unknown as Logger, lines };
}

/** The run stage over a batch of one write per `(tenant, id)`, on the in-memory store. */
async function runStage(
  writes: readonly { tenant: string; id: string }[],
  options: {
    semaphores?: SemaphoreFactory;
    databases?: (real: TenantDatabases) => TenantDatabases;
    env?: Record<string, string>;
  } = {},
) {
  const config = testConfig(options.env);
  const real = new TenantDatabases({
    config,
    store: new MemoryObjectStore({ bucket: new MemoryBucket(`run-tenants-${Math.random()}`) }),
    budget: new ConcurrencyBudget(config.poolConcurrency),
  });
  cleanup.push(() => real.close());
  const records = writes.map((w, i) => sqsRecord(body({ tenant: w.tenant, id: w.id }), `m-${i}`));
  const plan = planBatch(records, config.resources);
  const ledger = new OutcomeLedger(records);
  const deadline = new InvocationDeadline(systemClock, Date.now(), 30_000, config.deadlineMarginMs, 1_000);
  cleanup.push(() => deadline.dispose());
  const metrics = new InvocationMetrics();
  cleanup.push(() => metrics.detach());
  const { logger, lines } = recordingLogger();
  await runTenants(
    plan.tenants,
    options.databases?.(real) ?? real,
    new TenantPermits(config, options.semaphores),
    {
      ledger,
      deadline,
      leaseMs: 40_000,
      metrics,
      logger,
    },
  );
  return { ledger, lines, metrics, databases: real };
}

describe('runTenants', () => {
  it('unpins its tenants when it ends: one the cache evicted meanwhile is then disconnected', async () => {
    const disconnect = vi.spyOn(Database.prototype, 'disconnect');
    const { ledger, databases } = await runStage(
      [
        { tenant: 'acme', id: 'a-1' },
        { tenant: 'globex', id: 'g-1' },
      ],
      { env: { TENANT_CACHE_SIZE: '1' } },
    );
    expect(ledger.response().batchItemFailures).toEqual([]);
    expect(databases.size).toBe(1);
    // The evicted tenant is retired in the background once released.
    for (let i = 0; i < 100 && disconnect.mock.calls.length === 0; i++)
      await new Promise((r) => setImmediate(r));
    expect(disconnect).toHaveBeenCalledTimes(1);
  });

  it('a tenant whose Database cannot be opened is redelivered as a storage failure and logged; others are written', async () => {
    const unavailable = new Error('cannot open');
    const { ledger, lines } = await runStage(
      [
        { tenant: 'broken', id: 'b-1' },
        { tenant: 'acme', id: 'a-1' },
        { tenant: 'broken', id: 'b-2' },
      ],
      {
        databases: (real) =>
          Object.assign(Object.create(real) as TenantDatabases, {
            get: (tenant: string) => (tenant === 'broken' ? Promise.reject(unavailable) : real.get(tenant)),
            release: real.release.bind(real),
          }),
      },
    );
    expect(ledger.fateOf('m-0')).toEqual({ state: 'redeliver', cause: 'storage', error: unavailable });
    expect(ledger.fateOf('m-2')).toEqual({ state: 'redeliver', cause: 'storage', error: unavailable });
    expect(ledger.fateOf('m-1')).toEqual({ state: 'written' });
    expect(lines).toEqual([
      {
        level: 'error',
        message: 'tenant database unavailable',
        fields: { tenant: 'broken', error: unavailable },
      },
    ]);
  });

  it('a tenant whose permits cannot be had is redelivered as permits-unavailable and logged with the reason', async () => {
    const refused = new Error('table unreachable');
    const semaphores: SemaphoreFactory = (name, limit) => {
      const inner = new MemorySemaphore({ name, limit });
      return name.includes('t=acme/') ? { name, limit, acquire: () => Promise.reject(refused) } : inner;
    };
    // Ten writes: a tenant that takes its own prefix lease (fewer take none).
    const writes = Array.from({ length: 10 }, (_, i) => ({ tenant: 'acme', id: `a-${i}` }));
    const { ledger, lines, metrics } = await runStage(writes, { semaphores });
    expect(ledger.fateOf('m-0')).toEqual({
      state: 'redeliver',
      cause: 'permits-unavailable',
      error: refused,
    });
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'no semaphore permits: tenant writes redelivered',
        fields: { tenant: 'acme', error: refused },
      },
    ]);
    expect(metrics.counts.PermitsHeld).toBe(0);
  });

  it('a tenant run that fails on a bug is logged; its records keep their outcomes, the others stay redelivered', async () => {
    const { ledger, lines } = await runStage(
      [
        { tenant: 'acme', id: 'a-1' },
        { tenant: 'acme', id: 'a-2' },
      ],
      {
        // A Database whose resource lookup throws: a bug of ours, not a storage failure.
        databases: (real) =>
          Object.assign(Object.create(real) as TenantDatabases, {
            get: async (tenant: string) => {
              const entry = await real.get(tenant);
              const db = Object.assign(Object.create(entry.db), {
                resource: () => {
                  throw new TypeError('resource lookup bug');
                },
              });
              return { ...entry, db };
            },
            release: () => undefined,
          }),
      },
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'error',
      message: 'tenant run failed',
      fields: { tenant: 'acme' },
    });
    expect(lines[0]!.fields.error).toBeInstanceOf(TypeError);
    // No stage gave these records an outcome: the response redelivers them (as unexpected).
    expect(ledger.fateOf('m-0')).toBeUndefined();
    expect(ledger.response().batchItemFailures).toHaveLength(2);
  });
});
