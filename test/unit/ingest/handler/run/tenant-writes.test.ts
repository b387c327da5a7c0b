// runTenantWrites, one tenant's chains through its Database: every write's outcome goes to the ledger once,
// stale writes are counted, failed writes are logged (a storage failure as a warning, anything else as an
// error), a chain of one record is one PUT of its merged effect, a FIFO chain spanning records runs in
// message order and stops at its first transient failure, and nothing starts after the deadline. Issue 14's
// mutation testing of tenant-writes.ts, on a real Database over the in-memory store.
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../../../lib/db/database.js';
import { MemoryBucket, MemoryObjectStore } from '../../../../../lib/db/memory-object-store.js';
import { runTenantWrites } from '../../../../../lib/ingest/handler/run/tenant-writes.js';
import { OutcomeLedger } from '../../../../../lib/ingest/handler/settle/outcome-ledger.js';
import type { IngestWrite } from '../../../../../lib/ingest/message/types.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { sqsRecord } from '../support.js';

const pools: ExecutorPool[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const p of pools.splice(0)) p.stop();
});

let bucket = 0;
async function tenantDb() {
  const pool = new ExecutorPool({ concurrency: 4, retries: 0 });
  pools.push(pool);
  const store = new MemoryObjectStore({ bucket: new MemoryBucket(`tenant-writes-${++bucket}`) });
  const db = new Database({ tenant: 'acme', store, pool });
  await db.createResource({ name: 'orders' });
  return { db, store, pool };
}

let sent = 0;
function write(id: string, fields: Partial<IngestWrite> = {}): IngestWrite {
  sent++;
  return {
    op: 'upsert',
    tenant: 'acme',
    resource: 'orders',
    id,
    idSource: 'message',
    priority: 50,
    messageId: `m-${sent}`,
    seq: sent,
    seqSource: 'message',
    data: { total: sent },
    ...fields,
  } as IngestWrite;
}

function ledgerFor(chains: readonly (readonly IngestWrite[])[]): OutcomeLedger {
  const records: SQSRecord[] = chains.flat().map((w) => sqsRecord('{}', w.messageId));
  return new OutcomeLedger(records);
}

function recordingLogger() {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) =>
    function (this: unknown, message: string, fields: Record<string, unknown> = {}) {
      lines.push({ level, message, fields });
    };
  return { logger: { warn: at('warn'), error: at('error') } as unknown as Logger, lines };
}

const slowDown = () =>
  Object.assign(new Error('slow down'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });

describe('runTenantWrites', () => {
  it('settles every write, counts the stale ones, logs nothing when all is well', async () => {
    const { db } = await tenantDb();
    const a = write('a', { seq: 100 });
    const b = write('b');
    const chains = [[a], [b]];
    const ledger = ledgerFor([...chains, [a]]);
    const { logger, lines } = recordingLogger();
    const onStale = vi.fn();
    const deadline = new AbortController().signal;
    await runTenantWrites(db, chains, { ledger, deadline, logger, onStale });
    expect(ledger.response().batchItemFailures).toEqual([]);
    expect(onStale).not.toHaveBeenCalled();
    // The same writes again: both stale.
    const again = ledgerFor(chains);
    await runTenantWrites(db, chains, { ledger: again, deadline, logger, onStale });
    expect(onStale).toHaveBeenCalledTimes(2);
    expect(lines).toEqual([]);
    // Without a listener, stale writes are simply acknowledged.
    const third = ledgerFor(chains);
    await runTenantWrites(db, chains, { ledger: third, deadline, logger });
    expect(third.response().batchItemFailures).toEqual([]);
  });

  it('a storage failure is logged as a warning, an unexpected one as an error, each naming the write', async () => {
    const { db, store } = await tenantDb();
    const forbidden = Object.assign(new Error('Access Denied'), {
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    });
    const throttled = write('throttled');
    const denied = write('denied');
    vi.spyOn(store, 'put').mockImplementation(async (input) => {
      throw input.key.includes('throttled') ? slowDown() : forbidden;
    });
    const ledger = ledgerFor([[throttled], [denied]]);
    const { logger, lines } = recordingLogger();
    await runTenantWrites(db, [[throttled], [denied]], {
      ledger,
      deadline: new AbortController().signal,
      logger,
    });
    expect(ledger.fateOf(throttled.messageId)).toMatchObject({ state: 'redeliver', cause: 'storage' });
    expect(ledger.fateOf(denied.messageId)).toMatchObject({ state: 'redeliver', cause: 'unexpected' });
    const byLevel = Object.fromEntries(lines.map((l) => [l.level, l]));
    expect(lines).toHaveLength(2);
    expect(byLevel.warn).toMatchObject({
      message: 'write failed, will be redelivered',
      fields: { tenant: 'acme', messageId: throttled.messageId, resource: 'orders', id: 'throttled' },
    });
    expect(byLevel.warn!.fields.error).toMatchObject({ name: 'SlowDown' });
    expect(byLevel.error).toMatchObject({
      message: 'write failed, will be redelivered',
      fields: { tenant: 'acme', messageId: denied.messageId, id: 'denied', error: forbidden },
    });
  });

  it('a permanent failure or the deadline is not logged here (the dead letter and the summary say it)', async () => {
    const { db } = await tenantDb();
    const missingInsert = write('x', { op: 'insert', data: { total: 1 } });
    await runTenantWrites(db, [[missingInsert]], {
      ledger: ledgerFor([[missingInsert]]),
      deadline: new AbortController().signal,
      logger: recordingLogger().logger,
    });
    // An explicit-id insert with other content: record-exists, permanent.
    const conflicting = write('x', { op: 'insert', data: { total: 2 } });
    const ledger = ledgerFor([[conflicting]]);
    const { logger, lines } = recordingLogger();
    await runTenantWrites(db, [[conflicting]], { ledger, deadline: new AbortController().signal, logger });
    expect(ledger.fateOf(conflicting.messageId)).toMatchObject({ state: 'refused', reason: 'record-exists' });
    expect(lines).toEqual([]);
  });

  it('after the deadline no write starts: every write is redelivered for the deadline', async () => {
    const { db, store } = await tenantDb();
    const get = vi.spyOn(store, 'get');
    const put = vi.spyOn(store, 'put');
    const controller = new AbortController();
    const reason = new Error('cutoff');
    controller.abort(reason);
    const single = write('a');
    const group = [write('b'), write('c')];
    const ledger = ledgerFor([[single], group]);
    const { logger, lines } = recordingLogger();
    const onStale = vi.fn();
    await runTenantWrites(db, [[single], group], { ledger, deadline: controller.signal, logger, onStale });
    for (const w of [single, ...group])
      expect(ledger.fateOf(w.messageId)).toEqual({ state: 'redeliver', cause: 'deadline', error: reason });
    expect(get).not.toHaveBeenCalled();
    expect(put).not.toHaveBeenCalled();
    // Not stale (nothing was applied), and not logged one by one: the summary counts the deadline.
    expect(onStale).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it('a holder giving up its writes left for want of a slot (no slot before the cutoff): the writes not applied are out of turn, for deferral', async () => {
    const { db, store } = await tenantDb();
    const controller = new AbortController();
    const reason = new SemaphoreTimeoutError('prefix:b/t=acme/', 2, Date.now() + 1_000, Date.now() + 5_000);
    // One write's PUT is in flight when its holder gives up; the other has not started.
    const put = vi.spyOn(store, 'put').mockImplementationOnce(
      (_input, options) =>
        new Promise((_resolve, reject) => {
          const signal = options?.signal;
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
          queueMicrotask(() => controller.abort(reason));
        }),
    );
    const inFlight = write('a', { op: 'insert' });
    const ledger = ledgerFor([[inFlight]]);
    await runTenantWrites(db, [[inFlight]], {
      ledger,
      deadline: controller.signal,
      logger: recordingLogger().logger,
    });
    const notStarted = write('b');
    const later = ledgerFor([[notStarted]]);
    await runTenantWrites(db, [[notStarted]], {
      ledger: later,
      deadline: controller.signal,
      logger: recordingLogger().logger,
    });
    expect(put).toHaveBeenCalledTimes(1);
    expect(ledger.fateOf(inFlight.messageId)).toEqual({ state: 'out-of-turn', error: reason });
    expect(later.fateOf(notStarted.messageId)).toEqual({ state: 'out-of-turn', error: reason });
  });

  it('a chain spanning records (a FIFO group) runs in message order and stops at its first transient failure', async () => {
    const { db, store } = await tenantDb();
    const order: string[] = [];
    const put = store.put.bind(store);
    vi.spyOn(store, 'put').mockImplementation(async (input, options) => {
      order.push(input.key);
      if (input.key.includes('id=b.')) throw slowDown();
      return put(input, options);
    });
    const chain = [write('a'), write('b'), write('c')];
    const ledger = ledgerFor([chain]);
    const onStale = vi.fn();
    await runTenantWrites(db, [chain], {
      ledger,
      deadline: new AbortController().signal,
      logger: recordingLogger().logger,
      onStale,
    });
    expect(onStale).not.toHaveBeenCalled();
    expect(order).toEqual(['t=acme/r=orders/id=a.json', 't=acme/r=orders/id=b.json']);
    expect(ledger.fateOf(chain[0]!.messageId)).toEqual({ state: 'written' });
    expect(ledger.fateOf(chain[1]!.messageId)).toMatchObject({ state: 'redeliver', cause: 'storage' });
    expect(ledger.fateOf(chain[2]!.messageId)).toEqual({
      state: 'redeliver',
      cause: 'earlier-write-failed',
      error: undefined,
    });
  });

  it('a FIFO chain reaching the deadline midway starts nothing more: the rest is redelivered', async () => {
    const { db, store, pool } = await tenantDb();
    const controller = new AbortController();
    const reason = new Error('cutoff');
    // The cutoff passes right after the first write's PUT completed (its GET came first).
    let completed = 0;
    pool.on('pool:taskCompleted', () => {
      if (++completed === 2) controller.abort(reason);
    });
    const put = vi.spyOn(store, 'put');
    const chain = [write('a'), write('b'), write('c')];
    const ledger = ledgerFor([chain]);
    const onStale = vi.fn();
    await runTenantWrites(db, [chain], {
      ledger,
      deadline: controller.signal,
      logger: recordingLogger().logger,
      onStale,
    });
    expect(onStale).not.toHaveBeenCalled();
    expect(chain.map((w) => ledger.fateOf(w.messageId))).toEqual([
      { state: 'written' },
      { state: 'redeliver', cause: 'deadline', error: reason },
      { state: 'redeliver', cause: 'earlier-write-failed', error: undefined },
    ]);
    expect(put.mock.calls.map(([input]) => input.key)).toEqual(['t=acme/r=orders/id=a.json']);
  });

  it('a FIFO chain over two resources with the same id writes each record, one after the other', async () => {
    const { db, store } = await tenantDb();
    await db.createResource({ name: 'customers' });
    const put = vi.spyOn(store, 'put');
    const chain = [write('x'), write('x', { resource: 'customers' })];
    const ledger = ledgerFor([chain]);
    await runTenantWrites(db, [chain], {
      ledger,
      deadline: new AbortController().signal,
      logger: recordingLogger().logger,
    });
    expect(ledger.response().batchItemFailures).toEqual([]);
    expect(put.mock.calls.map(([input]) => input.key)).toEqual([
      't=acme/r=orders/id=x.json',
      't=acme/r=customers/id=x.json',
    ]);
  });

  it('a chain of one record is coalesced: one PUT of its merged effect, every write acknowledged', async () => {
    const { db, store } = await tenantDb();
    const put = vi.spyOn(store, 'put');
    const chain = [
      write('a', { data: { total: 1 } }),
      write('a', { op: 'update', data: { status: 'paid' } }),
    ];
    const ledger = ledgerFor([chain]);
    await runTenantWrites(db, [chain], {
      ledger,
      deadline: new AbortController().signal,
      logger: recordingLogger().logger,
    });
    expect(chain.map((w) => ledger.fateOf(w.messageId))).toEqual([
      { state: 'written' },
      { state: 'written' },
    ]);
    expect(put.mock.calls.map(([input]) => input.key)).toEqual(['t=acme/r=orders/id=a.json']);
    expect(await db.resource('orders').get('a')).toMatchObject({ total: 1, status: 'paid' });
  });

  it('one chain that throws (a bug) lets the others finish, then rethrows', async () => {
    const { db } = await tenantDb();
    const fine = write('fine');
    const twice = write('twice');
    const ledger = ledgerFor([[fine], [twice]]);
    // The ledger already has an outcome for `twice`: settling it again throws.
    ledger.settle(twice.messageId, { kind: 'written' });
    await expect(
      runTenantWrites(db, [[twice], [fine]], {
        ledger,
        deadline: new AbortController().signal,
        logger: recordingLogger().logger,
      }),
    ).rejects.toMatchObject({ name: 'OutcomeAlreadySettledError' });
    expect(ledger.fateOf(fine.messageId)).toEqual({ state: 'written' });
  });
});
