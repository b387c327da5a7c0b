// What one invocation of the handler reports about itself, beyond its response: the summary handed to
// `onInvocation` (the local runner prints it), the `batch processed` log line, when metrics are published,
// and the lease length asked of the semaphores. Issue 14's mutation testing of ingest-handler.ts.
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Clock, systemClock } from '../../../lib/ingest/handler/clock.js';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { MemorySemaphore } from '../../../lib/semaphore/memory-semaphore.js';
import type { AcquireOptions, Semaphore } from '../../../lib/semaphore/types.js';
import { captureStdout } from './handler/capture-stdout.js';
import {
  lambdaContext,
  sqsEvent,
  type TestHandlerOptions,
  TrackingStore,
  testHandler,
} from './handler/support.js';

const handlers: IngestHandler[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
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
      permitReleaseFailures: 0,
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

describe('the lease asked of the semaphores', () => {
  it('lasts the invocation time left plus SEMAPHORE_LEASE_MARGIN_MS', async () => {
    const asked: (AcquireOptions | undefined)[] = [];
    const semaphores = (name: string, limit: number): Semaphore => {
      const inner = new MemorySemaphore({ name, limit });
      return {
        name,
        limit,
        acquire: (k, options) => {
          asked.push(options);
          return inner.acquire(k, options);
        },
      };
    };
    const { handler } = setup({ SEMAPHORE_LEASE_MARGIN_MS: '7000' }, { semaphores });
    const many = Array.from({ length: 10 }, (_, i) => ({ id: `o-${i}` }));
    expect(await handler(sqsEvent(many), fixedContext(20_000))).toEqual({ batchItemFailures: [] });
    expect(asked.map((o) => o?.leaseMs)).toEqual([27_000]);
  });
});
