// What one invocation of the handler does beyond its response: the summary handed to `onInvocation` (the
// local runner prints it), the `batch processed` log line, when metrics are published, the booking asked
// of a prefix's rate budget, what it leaves behind (timers, pool listeners: warm invocations share the pools),
// and the ports the config selects. Issue 14's mutation testing of ingest-handler.ts.
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { type Clock, systemClock } from '../../../lib/ingest/handler/clock.js';
import { createIngestHandler, type IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { MemoryDeadLetterSink } from '../../../lib/ingest/handler/settle/memory-dead-letter-sink.js';
import { ExecutorPool } from '../../../lib/pool/executor-pool.js';
import { captureStdout } from './handler/capture-stdout.js';
import {
  failedIds,
  lambdaContext,
  memoryBudgets,
  quietMetrics,
  silentLogger,
  sqsEvent,
  type TestHandlerOptions,
  TrackingStore,
  testConfig,
  testHandler,
} from './handler/support.js';

const handlers: IngestHandler[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function setup(env: Record<string, string> = {}, options: TestHandlerOptions = {}) {
  const t = testHandler(env, options);
  handlers.push(t.handler);
  return t;
}

/** A Lambda context whose remaining time stays at `remainingMs` (a frozen clock). */
function fixedContext(remainingMs: number): Context {
  return { ...lambdaContext(remainingMs), getRemainingTimeInMillis: () => remainingMs };
}

describe('the invocation summary', () => {
  it('counts records and tenants, and measures the duration on the injected clock', async () => {
    let now = 1_000_000;
    const clock: Clock = { now: () => now, schedule: systemClock.schedule };
    const store = new TrackingStore();
    // Each PUT takes 100 ms of the fake clock.
    store.hook = (call) => {
      if (call.kind === 'put') now += 100;
    };
    const { handler, summaries } = setup({}, { store, clock });
    const event = sqsEvent([
      { tenant: 'acme', id: 'a-1' },
      { tenant: 'acme', id: 'a-2' },
      { tenant: 'globex', id: 'g-1' },
      'not json',
    ]);
    expect(await handler(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({
      records: 4,
      tenants: 2,
      durationMs: 300,
      deadlineReached: false,
      rateReportFailures: 0,
      RecordsProcessed: 3,
      RecordsDeadLettered: 1,
      splits: { RecordsRejected: { 'invalid-json': 1 }, RecordsRedelivered: {} },
    });
    expect(summaries[0]!.samples.ExecutionMs.length).toBeGreaterThan(0);
  });

  it('an event without Records is an empty batch', async () => {
    const { handler, summaries } = setup();
    expect(await handler({} as SQSEvent, lambdaContext(30_000))).toEqual({ batchItemFailures: [] });
    expect(summaries[0]).toMatchObject({ records: 0, tenants: 0, RecordsProcessed: 0 });
  });

  it('is logged once as `batch processed`, with its counts and without the raw samples', async () => {
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    const logger = new Logger({ serviceName: 'ingest-test', logLevel: 'INFO' });
    const { handler } = setup({}, { logger });
    const out = captureStdout();
    try {
      await handler(sqsEvent([{ id: 'o-1' }, { id: 'o-2' }]), lambdaContext(30_000));
    } finally {
      out.restore();
    }
    const lines = out.logs().filter((l) => l.message === 'batch processed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'INFO', records: 2, tenants: 1, RecordsProcessed: 2, Writes: 2 });
    expect(lines[0]).not.toHaveProperty('samples');
    expect(lines[0]).toHaveProperty('splits');
  });
});

describe('publishing metrics', () => {
  function metricsOn() {
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    return new Metrics({ namespace: 'S3IngestTest', serviceName: 'ingest-test' });
  }

  it('publishes its line at the end of each invocation by default', async () => {
    const metrics = metricsOn();
    const { handler } = setup({}, { metrics });
    const out = captureStdout();
    try {
      await handler(sqsEvent([{ id: 'o-1' }]), lambdaContext(30_000));
    } finally {
      out.restore();
    }
    expect(out.emf().filter((l) => 'RecordsProcessed' in l)).toHaveLength(1);
    expect(metrics.hasStoredMetrics()).toBe(false);
  });

  it('with flushMetrics false, leaves the line stored for the caller (the middy middleware) to publish', async () => {
    const metrics = metricsOn();
    const { handler } = setup({}, { metrics, flushMetrics: false });
    const out = captureStdout();
    try {
      await handler(sqsEvent([{ id: 'o-1' }]), lambdaContext(30_000));
      expect(out.emf()).toEqual([]);
      expect(metrics.hasStoredMetrics()).toBe(true);
      metrics.publishStoredMetrics();
    } finally {
      out.restore();
    }
    expect(out.emf().filter((l) => l.RecordsProcessed === 1)).toHaveLength(1);
  });
});

describe("the booking asked of a prefix's budget", () => {
  it("ends its slots by the invocation's cutoff and starts them no later than half the time left", async () => {
    const budgets = memoryBudgets();
    const { handler } = setup({ DEADLINE_MARGIN_MS: '2000' }, { budgets: budgets.factory });
    const many = Array.from({ length: 10 }, (_, i) => ({ id: `o-${i}` }));
    const before = Date.now();
    expect(await handler(sqsEvent(many), fixedContext(20_000))).toEqual({ batchItemFailures: [] });
    const after = Date.now();
    // Its first booking (a holder books again for writes left behind its slots).
    const { writes, writeBy, latestStart } = budgets.books()[0]!.options;
    expect(writes).toBe(10);
    // The cutoff: 20 s left less DEADLINE_MARGIN_MS.
    expect(writeBy).toBeGreaterThanOrEqual(before + 18_000);
    expect(writeBy).toBeLessThanOrEqual(after + 18_000);
    // Half the time left when it booked: at most 9 s before the cutoff, less the time the batch took.
    expect(writeBy - latestStart).toBeLessThanOrEqual(9_000);
    expect(writeBy - latestStart).toBeGreaterThanOrEqual(9_000 - (after - before));
  });
});

describe('what an invocation leaves behind', () => {
  it('no timer: the cutoff and settle timers are cancelled when it returns', async () => {
    const timers: { ms: number; cancelled: boolean }[] = [];
    const clock: Clock = {
      now: () => Date.now(),
      schedule: (ms, fn) => {
        const timer = { ms, cancelled: false };
        timers.push(timer);
        const cancel = systemClock.schedule(ms, fn);
        return () => {
          timer.cancelled = true;
          cancel();
        };
      },
    };
    const { handler } = setup({}, { clock });
    await handler(sqsEvent([{ id: 'o-1' }]), lambdaContext(30_000));
    // The cutoff's and the settle budget's.
    expect(timers).toHaveLength(2);
    expect(timers.filter((t) => !t.cancelled)).toEqual([]);
  });

  it('no pool listener: warm invocations do not pile listeners on the tenant pools they share', async () => {
    const on = vi.spyOn(ExecutorPool.prototype, 'on');
    const off = vi.spyOn(ExecutorPool.prototype, 'off');
    const { handler } = setup();
    for (let i = 0; i < 3; i++) {
      await handler(
        sqsEvent([
          { tenant: 'acme', id: `a-${i}` },
          { tenant: 'globex', id: `g-${i}` },
        ]),
        lambdaContext(30_000),
      );
      // Each invocation watches the pools of its two tenants, and lets go of every listener it added.
      expect(on.mock.calls.length).toBe(3 * 2 * (i + 1));
      expect(off.mock.calls.length).toBe(on.mock.calls.length);
    }
  });

  it('close() disconnects the tenant Databases it opened', async () => {
    const disconnect = vi.spyOn(Database.prototype, 'disconnect');
    const { handler } = setup();
    await handler(
      sqsEvent([
        { tenant: 'acme', id: 'a' },
        { tenant: 'globex', id: 'g' },
      ]),
      lambdaContext(30_000),
    );
    expect(disconnect).not.toHaveBeenCalled();
    await handler.close();
    expect(disconnect).toHaveBeenCalledTimes(2);
  });
});

describe('overlapping invocations on one handler (not Lambda, which runs one at a time: a local caller)', () => {
  it('the one that ends first does not stop the other from counting its writes', async () => {
    const store = new TrackingStore();
    let bStarted: () => void = () => {};
    const bHasStarted = new Promise<void>((r) => {
      bStarted = r;
    });
    let aAtPut: () => void = () => {};
    const aReachedPut = new Promise<void>((r) => {
      aAtPut = r;
    });
    let aDone: () => void = () => {};
    const aHasEnded = new Promise<void>((r) => {
      aDone = r;
    });
    // A's PUT waits for B to start; B's first storage call waits for A to end, so B writes after A ended.
    store.hook = async (call) => {
      if (call.key.startsWith('t=acme/') && call.kind === 'put') {
        aAtPut();
        await bHasStarted;
      }
      if (call.key.startsWith('t=globex/')) {
        bStarted();
        await aHasEnded;
      }
    };
    const { handler, summaries } = setup({}, { store });
    const a = handler(sqsEvent([{ tenant: 'acme', id: 'a' }]), lambdaContext(30_000)).then(aDone);
    // B begins once A's PUT was sent (and counted, A being the running invocation then).
    await aReachedPut;
    const b = handler(sqsEvent([{ tenant: 'globex', id: 'b' }]), lambdaContext(30_000));
    await Promise.all([a, b]);
    expect(summaries.map((s) => [s.tenants, s.Writes])).toEqual([
      [1, 1],
      [1, 1],
    ]);
  });
});

describe('ports and options', () => {
  it("with SEMAPHORE_TABLE set, tenants book their prefix's slots in DynamoDB: an unreachable table redelivers them", async () => {
    const sent: string[] = [];
    const dynamodb = {
      config: {},
      send: async (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'Error', code: 'ECONNREFUSED' });
      },
    } as unknown as DynamoDBClient;
    const { handler, summaries, store } = setup({ SEMAPHORE_TABLE: 'budgets' }, { clients: { dynamodb } });
    // Ten writes of one tenant: it books its prefix's slots (a tenant with fewer writes would book none).
    const event = sqsEvent(Array.from({ length: 10 }, (_, i) => ({ id: `o-${i}` })));
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(
      event.Records.map((r) => r.messageId).sort(),
    );
    expect(sent.length).toBeGreaterThan(0);
    expect(store.writes()).toEqual([]);
    expect(summaries[0]!.splits.RecordsRedelivered).toEqual({ 'permits-unavailable': 10 });
  });

  it('redeliveries: false changes no visibility (nothing is attempted, nothing logged)', async () => {
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    const logger = new Logger({ serviceName: 'ingest-test', logLevel: 'WARN' });
    const store = new TrackingStore();
    store.hook = (call) => {
      if (call.kind === 'put')
        throw Object.assign(new Error('boom'), {
          name: 'InternalError',
          $fault: 'server',
          $metadata: { httpStatusCode: 500 },
        });
    };
    const { handler } = setup({ WRITE_RETRIES: '0' }, { logger, store, redeliveries: false });
    const out = captureStdout();
    try {
      expect(
        (await handler(sqsEvent([{ id: 'o-1' }]), lambdaContext(30_000))).batchItemFailures,
      ).toHaveLength(1);
    } finally {
      out.restore();
    }
    expect(out.logs().filter((l) => String(l.message).includes('redelivery backoff'))).toEqual([]);
  });

  it('runs without an onInvocation callback', async () => {
    const handler = createIngestHandler(testConfig(), {
      store: new TrackingStore(),
      deadLetters: new MemoryDeadLetterSink(),
      logger: silentLogger(),
      metrics: quietMetrics(),
      redeliveries: false,
    });
    handlers.push(handler);
    expect(await handler(sqsEvent([{ id: 'o-1' }, 'not json']), lambdaContext(30_000))).toEqual({
      batchItemFailures: [],
    });
  });
});
