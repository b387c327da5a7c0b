// The handler's seams, as an attacker tried them (plan -> run -> settle over OutcomeLedger): duplicate
// messageIds in one event, stores and sinks that throw non-Errors or store only part, tenants kept apart,
// nothing left running after the handler answers. The duplicate-id tests failed before plan-batch planned a
// repeated messageId once.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { IngestHandler } from '../../../../lib/ingest/handler/ingest-handler.js';
import type { DeadLetter } from '../../../../lib/ingest/handler/settle/dead-letter-queue.js';
import { MemoryDeadLetterSink } from '../../../../lib/ingest/handler/settle/memory-dead-letter-sink.js';
import { MemoryRateBudget } from '../../../../lib/semaphore/memory-rate-budget.js';
import {
  body,
  failedIds,
  keyOf,
  lambdaContext,
  sqsEvent,
  sqsRecord,
  type TestHandlerOptions,
  testHandler,
} from './support.js';

const handlers: IngestHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function setup(env: Record<string, string> = {}, options: TestHandlerOptions = {}) {
  const t = testHandler(env, options);
  handlers.push(t.handler);
  return t;
}

/** A sink whose `send` never settles, as an SQS call with no timeout on a black-holed connection. */
class HangingSink extends MemoryDeadLetterSink {
  override send(letters: readonly DeadLetter[]): Promise<ReadonlySet<string>> {
    this.sends.push(letters);
    return new Promise(() => {});
  }
}

const LAMBDA_KILLED = Symbol('lambda killed');

describe('settle is bounded by the invocation deadline', () => {
  it('returns before the Lambda timeout when the dead-letter sink hangs (refused record redelivered)', async () => {
    // remaining 2.5 s, margin 2 s: cutoff after 0.5 s, Lambda kills the invocation at 2.5 s.
    const { handler } = setup({ DEADLINE_MARGIN_MS: '2000' }, { deadLetters: new HangingSink() });
    const event = sqsEvent(['not json', { id: 'o-1' }]);
    const result = await Promise.race([
      handler(event, lambdaContext(2_500)),
      sleep(2_500).then(() => LAMBDA_KILLED),
    ]);
    // A sink that ignores its signal must not hold the invocation: the handler stops waiting for it.
    expect(result).not.toBe(LAMBDA_KILLED);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[0]!.messageId }] });
  });
});

describe('rate budget port failures stay per tenant', () => {
  it('a budget factory that throws synchronously for one tenant does not fail the other tenants', async () => {
    const { handler, store } = setup(
      { SEMAPHORE_TABLE: 'unused' },
      {
        budgets: (name, ceiling) => {
          if (name.includes('t=broken/')) throw new Error('cannot build budget');
          return new MemoryRateBudget({ name, ceiling });
        },
      },
    );
    // 10 writes each: both tenants book their prefix's slots (factory called per tenant).
    const good = Array.from({ length: 10 }, (_, i) => ({ tenant: 'good', id: `g-${i}` }));
    const broken = Array.from({ length: 10 }, (_, i) => ({ tenant: 'broken', id: `b-${i}` }));
    const event = sqsEvent([...broken, ...good]);
    // A tenant that cannot have slots does not run: its records are redelivered; other tenants go on.
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(
      event.Records.slice(0, 10)
        .map((r) => r.messageId)
        .sort(),
    );
    expect(store.record(keyOf('good', 'orders', 'g-0'))).toBeDefined();
  });
});

describe('duplicate messageIds in one event', () => {
  // Two copies of one message (same messageId; different bodies only to tell their writes apart): the
  // write is planned once, from the first copy, and both copies share its outcome.
  const copies = () =>
    sqsEvent([sqsRecord(body({ id: 'o-1' }), 'dup'), sqsRecord(body({ id: 'o-2' }), 'dup')]);
  const putKeys = (store: ReturnType<typeof setup>['store']) =>
    new Set(store.writes().map((call) => call.key));

  it('does not acknowledge a messageId whose write failed, and writes no second copy of it', async () => {
    const { handler, store } = setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-1')) {
        throw Object.assign(new Error('InternalError'), { $metadata: { httpStatusCode: 500 } });
      }
    };
    const response = await handler(copies(), lambdaContext(30_000));
    expect(putKeys(store)).toEqual(new Set([keyOf('acme', 'orders', 'o-1')]));
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).toBeUndefined();
    expect(store.record(keyOf('acme', 'orders', 'o-2'))).toBeUndefined();
    expect(failedIds(response)).toEqual(['dup']);
  });

  it('acknowledges it once its one write is stored', async () => {
    const { handler, store } = setup();
    const response = await handler(copies(), lambdaContext(30_000));
    expect(putKeys(store)).toEqual(new Set([keyOf('acme', 'orders', 'o-1')]));
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).toBeDefined();
    expect(failedIds(response)).toEqual([]);
  });
});

describe('non-Error failures of the store', () => {
  for (const thrown of [null, undefined, 'boom', 42, { name: 'SlowDown' }]) {
    it(`redelivers a record whose store call throws ${JSON.stringify(thrown) ?? 'undefined'}`, async () => {
      const { handler, store } = setup();
      store.hook = (call) => {
        if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-2')) throw thrown;
      };
      const event = sqsEvent([{ id: 'o-1' }, { id: 'o-2' }]);
      const response = await handler(event, lambdaContext(30_000));
      expect(failedIds(response)).toEqual([event.Records[1]!.messageId]);
    });
  }
});

describe('dead-letter sink edge cases', () => {
  it('a sink that throws a non-Error redelivers the refused records and acknowledges the written ones', async () => {
    class ThrowingSink extends MemoryDeadLetterSink {
      override async send(): Promise<ReadonlySet<string>> {
        throw 'sink down';
      }
    }
    const { handler } = setup({}, { deadLetters: new ThrowingSink() });
    const event = sqsEvent(['not json', { id: 'o-1' }, '{"v":1}']);
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual([event.Records[0]!.messageId, event.Records[2]!.messageId].sort());
  });

  it('a sink that stores only some letters: exactly the refused ones are listed', async () => {
    const sink = new MemoryDeadLetterSink();
    const event = sqsEvent(['not json', '[]', { id: 'o-1' }]);
    sink.accept = (letter) => letter.messageId === event.Records[0]!.messageId;
    const { handler } = setup({}, { deadLetters: sink });
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual([event.Records[1]!.messageId]);
  });
});

describe('same record id across tenants', () => {
  it('writes both tenants and keeps them apart', async () => {
    const { handler, store } = setup();
    const event = sqsEvent([
      { tenant: 'a', id: 'x', data: { n: 1 } },
      { tenant: 'b', id: 'x', data: { n: 2 } },
    ]);
    const response = await handler(event, lambdaContext(30_000));
    expect(response.batchItemFailures).toEqual([]);
    expect(store.record(keyOf('a', 'orders', 'x'))).toMatchObject({ n: 1 });
    expect(store.record(keyOf('b', 'orders', 'x'))).toMatchObject({ n: 2 });
  });
});

describe('a tenant run that hits a second settle', () => {
  it('starts no storage call after the handler has returned', async () => {
    const { handler, store } = setup();
    store.hook = async (call) => {
      if (call.key === keyOf('acme', 'orders', 'slow')) await sleep(30);
    };
    // The same SQS message twice in one event (identical: at-least-once delivery) makes the second settle
    // throw inside runTenantWrites, whose Promise.all then rejects while the other chain is mid-way.
    const dup = sqsRecord(body({ id: 'dup' }), 'dup');
    const event = sqsEvent([
      dup,
      dup,
      sqsRecord(body({ id: 'slow' }), 's-1'),
      sqsRecord(body({ id: 'slow', op: 'update', data: { n: 2 } }), 's-2'),
      sqsRecord(body({ id: 'slow', op: 'update', data: { n: 3 } }), 's-3'),
    ]);
    await handler(event, lambdaContext(30_000));
    const callsAtReturn = store.calls.length;
    // Proving an absence: give a leaked chain longer than its slow write (30 ms) to start another call.
    await sleep(200);
    expect(store.calls.length).toBe(callsAtReturn);
  });
});
