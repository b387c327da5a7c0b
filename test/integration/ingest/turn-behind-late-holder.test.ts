// A tenant's turn behind a holder running late (dynalite, the real adaptive semaphore): the holder said when
// it would be done and is not; a waiter whose turn wait runs out then stays for the hand-over (up to
// LATE_HOLDER_GRACE_MS) instead of giving up just before the release and leaving the prefix idle.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { acquireForTurn, LATE_HOLDER_GRACE_MS } from '../../../lib/ingest/handler/run/acquire-turn.js';
import { AdaptiveDynamoSemaphore, SemaphoreTimeoutError } from '../../../lib/semaphore/index.js';
import { semaphoreTable } from '../semaphore/support/dynamo.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

// 50/s at an assumed 50 ms with 1.5 slack: 3.75 permits; a holder of 10 requests is due 200 ms after its grant.
const semaphore = () =>
  new AdaptiveDynamoSemaphore({
    client,
    tableName,
    name: `late-${randomUUID().slice(0, 8)}`,
    limit: 50,
    adaptive: { ratePerSecond: 50, initialLatencyMs: 50, inFlightSlack: 1.5 },
    backoffBaseMs: 5,
    backoffCapMs: 20,
  });

/** Releases `lease` once `ms` have passed: a holder late by design (the scenario, not a wait for an event). */
const releaseAfter = (lease: { release(): Promise<void> }, ms: number) =>
  new Promise<void>((resolve, reject) => setTimeout(() => lease.release().then(resolve, reject), ms));

describe('a turn behind a holder running late (dynalite)', () => {
  it('a plain acquire gives up at its deadline saying the holder was due; the turn wait stays and gets the lease', async () => {
    const sem = semaphore();
    const holder = await sem.acquire(4, { min: 1, requests: 10 });
    const heldAt = Date.now();
    // Due at +200 ms; released at +700 ms, after the waiters' 400 ms deadline.
    const released = releaseAfter(holder, 700);
    const plain = sem.acquire(1, { min: 1, deadline: heldAt + 400, requests: 10 }).catch((e: unknown) => e);
    const turn = acquireForTurn(
      sem,
      1,
      { min: 1, deadline: heldAt + 400, requests: 10 },
      LATE_HOLDER_GRACE_MS,
      heldAt + 5_000,
    );
    const error = await plain;
    expect(error).toBeInstanceOf(SemaphoreTimeoutError);
    expect((error as SemaphoreTimeoutError).freeAt).toBeUndefined();
    expect((error as SemaphoreTimeoutError).dueAt).toBeLessThanOrEqual(heldAt + 400);
    expect(Date.now() - heldAt).toBeLessThan(700);
    const lease = await turn;
    await released;
    expect(lease.permits).toBeGreaterThanOrEqual(1);
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(700);
    await lease.release();
  });

  it('a holder due after the deadline: the turn wait gives up at once, as a plain acquire does', async () => {
    const sem = semaphore();
    // 100 requests at 50/s: due 2 s after the grant.
    const holder = await sem.acquire(4, { min: 1, requests: 100 });
    const started = Date.now();
    const error = await acquireForTurn(
      sem,
      1,
      { min: 1, deadline: started + 400, requests: 10 },
      LATE_HOLDER_GRACE_MS,
      started + 5_000,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SemaphoreTimeoutError);
    expect((error as SemaphoreTimeoutError).freeAt).toBeGreaterThan(started + 1_500);
    expect(Date.now() - started).toBeLessThan(400);
    await holder.release();
  });
});
