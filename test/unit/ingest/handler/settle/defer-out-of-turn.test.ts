// The deferral stage and its policy: which out-of-turn records are deferred, with what delay, and what
// happens when the port refuses, fails or does not answer (they are redelivered, never lost).
import { describe, expect, it, vi } from 'vitest';
import {
  canDefer,
  DEFERRAL_POLICY,
  deferOutOfTurn,
  deferralDelaySeconds,
} from '../../../../../lib/ingest/handler/settle/defer-out-of-turn.js';
import {
  DEFERRAL_ATTRIBUTES,
  type DeferralPort,
} from '../../../../../lib/ingest/handler/settle/deferral-port.js';
import { MemoryDeferrals } from '../../../../../lib/ingest/handler/settle/memory-deferrals.js';
import { OutcomeLedger } from '../../../../../lib/ingest/handler/settle/outcome-ledger.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { silentLogger, sqsRecord } from '../support.js';

const open = () => new AbortController().signal;

function outOfTurn(n: number, error: unknown = new SemaphoreTimeoutError('prefix:t', 1, Date.now())) {
  const records = Array.from({ length: n }, (_, i) => sqsRecord(`body-${i}`, `m-${i}`));
  const ledger = new OutcomeLedger(records);
  for (const r of records) ledger.settle(r.messageId, { kind: 'out-of-turn', error }, 'acme');
  return { records, ledger };
}

function withDeferrals(record: ReturnType<typeof sqsRecord>, n: number) {
  record.messageAttributes[DEFERRAL_ATTRIBUTES.deferrals] = {
    dataType: 'Number',
    stringValue: String(n),
    stringListValues: [],
    binaryListValues: [],
  };
  return record;
}

describe('deferralDelaySeconds', () => {
  it('until the first free slot, rounded down to whole seconds, between the first and the longest delay', () => {
    const now = 1_000_000;
    expect(deferralDelaySeconds(0, now + 4_900, now)).toBe(4);
    expect(deferralDelaySeconds(7, now + 4_900, now)).toBe(4);
    expect(deferralDelaySeconds(0, now + 300, now)).toBe(DEFERRAL_POLICY.firstDelaySeconds);
    expect(deferralDelaySeconds(0, now - 5_000, now)).toBe(DEFERRAL_POLICY.firstDelaySeconds);
    expect(deferralDelaySeconds(0, now + 600_000, now)).toBe(DEFERRAL_POLICY.maxDelaySeconds);
  });

  it('without a first free slot: the first delay, doubling every fourth deferral, up to the longest', () => {
    expect([0, 1, 3, 4, 7, 8, 12, 16, 19, 40].map((n) => deferralDelaySeconds(n))).toEqual([
      1, 1, 1, 2, 2, 4, 8, 16, 16, 30,
    ]);
    expect(deferralDelaySeconds(-2)).toBe(1);
    expect(deferralDelaySeconds(Number.NaN)).toBe(1);
    expect(deferralDelaySeconds(0, Number.NaN)).toBe(1);
  });
});

describe('canDefer', () => {
  it('a tenant with no FIFO group, under the cap', () => {
    expect(canDefer({ ordered: false, deferrals: DEFERRAL_POLICY.maxDeferrals - 1 })).toBe(true);
    expect(canDefer({ ordered: false, deferrals: DEFERRAL_POLICY.maxDeferrals })).toBe(false);
    expect(canDefer({ ordered: true, deferrals: 0 })).toBe(false);
  });
});

describe('deferOutOfTurn', () => {
  it('defers every eligible record until its first free slot; nothing pending, no call', async () => {
    const now = Date.now();
    const { ledger, records } = outOfTurn(3, new SemaphoreTimeoutError('p', 1, now, now + 3_500));
    const port = new MemoryDeferrals();
    await deferOutOfTurn(ledger, port, silentLogger(), open());
    expect([...port.deferred.keys()]).toEqual(records.map((r) => r.messageId));
    expect([...port.deferred.values()].map((d) => d.delaySeconds)).toEqual([3, 3, 3]);
    expect(ledger.counts()).toMatchObject({ deferred: 3, redelivered: 0 });
    await deferOutOfTurn(ledger, port, silentLogger(), open());
    expect(port.calls).toHaveLength(1);
  });

  it('a record that names no source queue is deferred as from a standard queue', async () => {
    const { ledger, records } = outOfTurn(1);
    (records[0] as { eventSourceARN?: string }).eventSourceARN = undefined;
    const port = new MemoryDeferrals();
    await deferOutOfTurn(ledger, port, silentLogger(), open());
    expect([...port.deferred.keys()]).toEqual([records[0]!.messageId]);
    expect(ledger.counts()).toMatchObject({ deferred: 1, redelivered: 0 });
  });

  it('a first free slot already passed says nothing: the exponential of the deferrals, as without one', async () => {
    const now = Date.now();
    expect(deferralDelaySeconds(12, now - 200, now)).toBe(8);
    expect(deferralDelaySeconds(12, now, now)).toBe(8);
    const passed = outOfTurn(2, new SemaphoreTimeoutError('p', 1, now, now - 200));
    for (const record of passed.records) withDeferrals(record, 12);
    const port = new MemoryDeferrals();
    await deferOutOfTurn(passed.ledger, port, silentLogger(), open());
    expect([...port.deferred.values()].map((d) => d.delaySeconds)).toEqual([8, 8]);
    // A first free slot ahead: until then, whatever the deferrals.
    const ahead = outOfTurn(1, new SemaphoreTimeoutError('p', 1, now, Date.now() + 3_500));
    withDeferrals(ahead.records[0]!, 12);
    const other = new MemoryDeferrals();
    await deferOutOfTurn(ahead.ledger, other, silentLogger(), open());
    expect([...other.deferred.values()].map((d) => d.delaySeconds)).toEqual([3]);
  });

  it('FIFO records, records at the cap and those the port refuses are redelivered; no port: all of them', async () => {
    const { ledger, records } = outOfTurn(4);
    records[0]!.eventSourceARN = 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo';
    withDeferrals(records[1]!, DEFERRAL_POLICY.maxDeferrals);
    withDeferrals(records[2]!, DEFERRAL_POLICY.maxDeferrals - 1);
    const port = new MemoryDeferrals();
    port.accept = (d) => d.record.messageId !== 'm-3';
    await deferOutOfTurn(ledger, port, silentLogger(), open());
    expect(port.calls.flat().map((d) => d.record.messageId)).toEqual(['m-2', 'm-3']);
    expect(ledger.fateOf('m-2')).toEqual({ state: 'deferred' });
    for (const id of ['m-0', 'm-1', 'm-3'])
      expect(ledger.fateOf(id)).toMatchObject({ state: 'redeliver', cause: 'permits-unavailable' });

    const none = outOfTurn(2);
    const logger = silentLogger();
    const warn = vi.spyOn(logger, 'warn');
    await deferOutOfTurn(none.ledger, undefined, logger, open());
    expect(none.ledger.counts()).toMatchObject({ deferred: 0, redelivered: 2 });
    // No port is not a failing port.
    expect(warn).not.toHaveBeenCalled();
  });

  it('asks no port when nothing pending can be deferred, and hands the port the settle signal', async () => {
    const { ledger, records } = outOfTurn(1);
    records[0]!.eventSourceARN = 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo';
    const port = new MemoryDeferrals();
    await deferOutOfTurn(ledger, port, silentLogger(), open());
    expect(port.calls).toEqual([]);
    expect(ledger.fateOf('m-0')).toMatchObject({ state: 'redeliver' });

    const seen: AbortSignal[] = [];
    const watching: DeferralPort = {
      defer: async (_, options) => {
        seen.push(options.signal);
        return new Set();
      },
    };
    const controller = new AbortController();
    await deferOutOfTurn(outOfTurn(1).ledger, watching, silentLogger(), controller.signal);
    expect(seen).toEqual([controller.signal]);
  });

  it('logs a failing port with how many records it redelivers', async () => {
    const logger = silentLogger();
    const warn = vi.spyOn(logger, 'warn');
    const error = new Error('SQS down');
    await deferOutOfTurn(outOfTurn(3).ledger, { defer: () => Promise.reject(error) }, logger, open());
    expect(warn).toHaveBeenCalledWith('deferral failed: records redelivered', { error, records: 3 });
  });

  it('a port that fails, or does not answer before the signal, leaves every record redelivered', async () => {
    const failing: DeferralPort = {
      defer: async () => {
        throw new Error('SQS down');
      },
    };
    const a = outOfTurn(2);
    await deferOutOfTurn(a.ledger, failing, silentLogger(), open());
    expect(a.ledger.counts()).toMatchObject({ deferred: 0, redelivered: 2 });

    const silent: DeferralPort = { defer: () => new Promise(() => undefined) };
    const b = outOfTurn(2);
    const controller = new AbortController();
    const settled = deferOutOfTurn(b.ledger, silent, silentLogger(), controller.signal);
    controller.abort(new Error('settle budget spent'));
    await settled;
    expect(b.ledger.counts()).toMatchObject({ deferred: 0, redelivered: 2 });
    expect(b.ledger.pendingDeferrals()).toEqual([]);
  });
});
