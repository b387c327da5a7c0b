// runTenants, the run stage: a tenant that cannot run (its Database cannot be opened, its slots cannot be
// had, its run hits a bug of ours) is redelivered with the right cause and logged with its name, while the
// other tenants are written. Issue 14's mutation testing of run-tenants.ts found these paths untested.
// Also: a tenant whose prefix's schedule others booked past its wait is out of turn, the figures the stage
// counts (booked write rate, stale writes, its pools' events, failed reports), and how long a tenant waits
// for its first slot (the turn wait only when all its records can be deferred).
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../../../lib/db/database.js';
import { MemoryBucket, MemoryObjectStore } from '../../../../../lib/db/memory-object-store.js';
import { systemClock } from '../../../../../lib/ingest/handler/clock.js';
import { InvocationDeadline } from '../../../../../lib/ingest/handler/invocation-deadline.js';
import { planBatch } from '../../../../../lib/ingest/handler/plan/plan-batch.js';
import { PrefixRates } from '../../../../../lib/ingest/handler/run/prefix-rates.js';
import type { RateBudgetFactory } from '../../../../../lib/ingest/handler/run/rate-holder.js';
import { type RunContext, runTenants } from '../../../../../lib/ingest/handler/run/run-tenants.js';
import { TenantDatabases } from '../../../../../lib/ingest/handler/run/tenant-databases.js';
import { DEFERRAL_POLICY } from '../../../../../lib/ingest/handler/settle/defer-out-of-turn.js';
import { DEFERRAL_ATTRIBUTES } from '../../../../../lib/ingest/handler/settle/deferral-port.js';
import { InvocationMetrics } from '../../../../../lib/ingest/handler/settle/invocation-metrics.js';
import { OutcomeLedger } from '../../../../../lib/ingest/handler/settle/outcome-ledger.js';
import { ConcurrencyBudget } from '../../../../../lib/pool/concurrency-budget.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { body, memoryBudgets, prefixOf, sqsRecord, testConfig } from '../support.js';

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
  writes: readonly { tenant: string; id: string; seq?: number }[],
  options: {
    budgets?: RateBudgetFactory;
    databases?: (real: TenantDatabases) => TenantDatabases;
    env?: Record<string, string>;
    store?: MemoryObjectStore;
    /** Changes each record before the plan (receive counts, attributes). */
    record?: (record: SQSRecord) => void;
    context?: Pick<RunContext, 'turnWaitMs' | 'deferrable'>;
    /** The invocation's remaining time (its cutoff is `DEADLINE_MARGIN_MS`, 2 s, before its end). */
    remainingMs?: number;
  } = {},
) {
  const config = testConfig(options.env);
  const real = new TenantDatabases({
    config,
    store:
      options.store ?? new MemoryObjectStore({ bucket: new MemoryBucket(`run-tenants-${Math.random()}`) }),
    budget: new ConcurrencyBudget(config.poolConcurrency),
  });
  cleanup.push(() => real.close());
  const records = writes.map((w, i) =>
    sqsRecord(body({ tenant: w.tenant, id: w.id, ...(w.seq === undefined ? {} : { seq: w.seq }) }), `m-${i}`),
  );
  for (const record of records) options.record?.(record);
  const plan = planBatch(records, config.resources);
  const ledger = new OutcomeLedger(records);
  const deadline = new InvocationDeadline(
    systemClock,
    Date.now(),
    options.remainingMs ?? 30_000,
    config.deadlineMarginMs,
    1_000,
  );
  cleanup.push(() => deadline.dispose());
  const metrics = new InvocationMetrics();
  cleanup.push(() => metrics.detach());
  const { logger, lines } = recordingLogger();
  await runTenants(
    plan.tenants,
    options.databases?.(real) ?? real,
    new PrefixRates(config, options.budgets),
    {
      ledger,
      deadline,
      metrics,
      logger,
      ...options.context,
    },
  );
  return { ledger, lines, metrics, databases: real };
}

/** Ten writes of one tenant: enough for it to book its prefix's slots (fewer book none). */
const largeTenant = (tenant = 'acme') =>
  Array.from({ length: 10 }, (_, i) => ({ tenant, id: `${tenant}-${i}` }));

/** The latest first slot each booking asked for, in ms after `before`. */
const latestStarts = (budgets: ReturnType<typeof memoryBudgets>, before: number) =>
  budgets.books().map((b) => b.options.latestStart - before);

describe('runTenants', () => {
  it("a tenant writing only a sharded resource books a stripe of its sharded budget, not its prefix's", async () => {
    const budgets = memoryBudgets();
    const { ledger } = await runStage(largeTenant('whale'), {
      budgets: budgets.factory,
      env: { RESOURCE_SHARDS: '{"orders":4}' },
    });
    expect(ledger.response().batchItemFailures).toEqual([]);
    const names = budgets.books().map((b) => b.name);
    // One booking, or more when its slots end before its writes have run (a loaded machine): it rebooks,
    // in a stripe again.
    expect(names.length).toBeGreaterThanOrEqual(1);
    for (const name of names)
      expect(name).toMatch(/^prefix:ignored-by-memory-store\/t=whale\/s=\*\/stripe=[0-3]of4$/);
  });

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

  it('a tenant whose slots cannot be had is redelivered as permits-unavailable and logged with the reason', async () => {
    const refused = new Error('table unreachable');
    const budgets = memoryBudgets({
      book: (name) => {
        if (name === prefixOf('acme')) throw refused;
      },
    });
    // Ten writes: a tenant that books its prefix's slots (fewer book none).
    const writes = Array.from({ length: 10 }, (_, i) => ({ tenant: 'acme', id: `a-${i}` }));
    const { ledger, lines, metrics } = await runStage(writes, { budgets: budgets.factory });
    expect(ledger.fateOf('m-0')).toEqual({
      state: 'redeliver',
      cause: 'permits-unavailable',
      error: refused,
    });
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'no slots in the prefix schedule: tenant writes redelivered',
        fields: { tenant: 'acme', error: refused },
      },
    ]);
    expect(metrics.counts.BookedWriteRate).toBe(0);
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
  it("a tenant whose prefix's schedule others booked past its wait is out of turn; its records keep that outcome", async () => {
    const budgets = memoryBudgets();
    const ahead = await budgets.bookAhead(prefixOf('acme'), testConfig().s3PrefixWriteRate, 60_000);
    const { ledger, lines } = await runStage([...largeTenant('acme'), { tenant: 'globex', id: 'g-1' }], {
      budgets: budgets.factory,
    });
    const fate = ledger.fateOf('m-0');
    expect(fate).toEqual({ state: 'out-of-turn', error: expect.any(SemaphoreTimeoutError) });
    // The schedule said when its first free slot is: where the booking ahead ends.
    expect(fate?.state === 'out-of-turn' && (fate.error as SemaphoreTimeoutError).freeAt).toBe(ahead.endsAt);
    for (let i = 1; i < 10; i++) expect(ledger.fateOf(`m-${i}`)).toEqual(fate);
    expect(ledger.fateOf('m-10')).toEqual({ state: 'written' });
    expect(lines).toEqual([]);
  });

  it('counts the write rate its tenants booked at, and the stale writes', async () => {
    const store = new MemoryObjectStore({ bucket: new MemoryBucket(`run-tenants-${Math.random()}`) });
    const budgets = memoryBudgets();
    // Explicit seqs: a redelivery is then the same writes, not newer ones.
    const writes = largeTenant().map((w, i) => ({ ...w, seq: i + 1 }));
    const first = await runStage(writes, {
      budgets: budgets.factory,
      store,
      env: { S3_PREFIX_WRITE_RATE: '700' },
    });
    expect(budgets.books()[0]).toMatchObject({ name: prefixOf('acme'), options: { writes: 10 } });
    // A fresh schedule books at its ceiling, S3_PREFIX_WRITE_RATE.
    expect(first.metrics.counts.BookedWriteRate).toBe(700);
    expect(first.metrics.counts.StaleWrites).toBe(0);
    // The same messages again (a redelivery): every write is already stored, so each is stale.
    const again = await runStage(writes, { budgets: budgets.factory, store });
    expect(again.ledger.response().batchItemFailures).toEqual([]);
    expect(again.metrics.counts.StaleWrites).toBe(10);
  });

  it("counts its tenants' pool events: a write S3 slowed down and retried", async () => {
    const store = new MemoryObjectStore({ bucket: new MemoryBucket(`run-tenants-${Math.random()}`) });
    const put = store.put.bind(store);
    let calls = 0;
    vi.spyOn(store, 'put').mockImplementation(async (input, options) => {
      if (++calls === 1)
        throw Object.assign(new Error('slow down'), {
          name: 'SlowDown',
          $fault: 'server',
          $metadata: { httpStatusCode: 503 },
        });
      return put(input, options);
    });
    const { ledger, metrics } = await runStage([{ tenant: 'acme', id: 'a-1' }], {
      store,
      env: { WRITE_RETRIES: '1' },
    });
    expect(ledger.fateOf('m-0')).toEqual({ state: 'written' });
    expect(metrics.counts).toMatchObject({ S3SlowDowns: 1, Retries: 1 });
  });

  it('a failed report is counted and logged with its prefix; the written records stay written', async () => {
    const lost = new Error('report timed out');
    const budgets = memoryBudgets({
      report: () => {
        throw lost;
      },
    });
    const { ledger, lines, metrics } = await runStage(largeTenant(), { budgets: budgets.factory });
    expect(ledger.response().batchItemFailures).toEqual([]);
    expect(metrics.rateReportFailures).toBe(1);
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'rate report failed: the next report steps the rate; outcomes unchanged',
        fields: { prefix: prefixOf('acme'), error: lost },
      },
    ]);
  });

  it('waits turnWaitMs for its first slot only when every record of the tenant can be deferred', async () => {
    const waitOf = async (context: Pick<RunContext, 'turnWaitMs' | 'deferrable'>) => {
      const budgets = memoryBudgets();
      const before = Date.now();
      await runStage(largeTenant(), { budgets: budgets.factory, context });
      // Its first booking (writes its slots left behind book again at the end of the schedule).
      expect(budgets.books().length).toBeGreaterThanOrEqual(1);
      return latestStarts(budgets, before)[0]!;
    };
    // The deadline's window is 30 s less the 2 s margin: without a turn wait the tenant may wait half of
    // it (14 s) for its first slot.
    expect(await waitOf({})).toBeGreaterThan(13_000);
    const turn = await waitOf({ turnWaitMs: 50 });
    expect(turn).toBeGreaterThanOrEqual(50);
    expect(turn).toBeLessThan(1_000);
    expect(await waitOf({ turnWaitMs: 50, deferrable: () => true })).toBeLessThan(1_000);
    // One record the deferral port could not take keeps the whole tenant waiting as long as any, also
    // when it shares its chain (its record) with records the port could take.
    expect(await waitOf({ turnWaitMs: 50, deferrable: (id) => id !== 'm-3' })).toBeGreaterThan(13_000);
    const budgets = memoryBudgets();
    const before = Date.now();
    const sameRecord = largeTenant().map((w) => ({ ...w, id: 'a-1' }));
    await runStage(sameRecord, {
      budgets: budgets.factory,
      context: { turnWaitMs: 50, deferrable: (id) => id !== 'm-9' },
    });
    expect(latestStarts(budgets, before)[0]).toBeGreaterThan(13_000);
  });

  it('a tenant still waiting for its booking at the cutoff is redelivered, not out of turn', async () => {
    // The booking answers only when the invocation's signal aborts (its cutoff, 200 ms in), as a stalled store.
    const budgets = memoryBudgets({
      book: (_, options) =>
        new Promise((_resolve, reject) =>
          options.signal?.addEventListener('abort', () => reject(options.signal?.reason)),
        ),
    });
    const { ledger, lines } = await runStage(largeTenant(), {
      budgets: budgets.factory,
      remainingMs: 2_200,
      context: { turnWaitMs: 50 },
    });
    expect(ledger.fateOf('m-0')).toMatchObject({
      state: 'redeliver',
      cause: 'permits-unavailable',
      error: expect.any(SemaphoreTimeoutError),
    });
    expect(ledger.response().batchItemFailures).toHaveLength(10);
    expect(lines).toMatchObject([
      { level: 'warn', message: 'no slots in the prefix schedule: tenant writes redelivered' },
    ]);
  });

  it('a tenant that cannot be deferred (deferred too often already) waits as long as any', async () => {
    const budgets = memoryBudgets();
    const before = Date.now();
    await runStage(largeTenant(), {
      budgets: budgets.factory,
      context: { turnWaitMs: 50 },
      record: (record) => {
        record.messageAttributes = {
          [DEFERRAL_ATTRIBUTES.deferrals]: {
            dataType: 'Number',
            stringValue: String(DEFERRAL_POLICY.maxDeferrals),
          },
        };
      },
    });
    expect(latestStarts(budgets, before)[0]).toBeGreaterThan(13_000);
  });
});
