// `FLEET_CAP` picks how the handler caps a tenant prefix fleet-wide when `SEMAPHORE_TABLE` is set: the
// DynamoDB requests its default ports send tell the engine apart by the item they address (`rate#<name>`:
// the rate budget, docs/fleet-cap.md; `sem#<name>`: the adaptive permits).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import type { IngestHandler } from '../../../../lib/ingest/handler/ingest-handler.js';
import { failedIds, lambdaContext, sqsEvent, testHandler } from './support.js';

const handlers: IngestHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

/** A DynamoDB client that records the partition key of every request and fails it (the table is down). */
function downTable(): { client: DynamoDBClient; keys: string[] } {
  const keys: string[] = [];
  const send = async (command: { input: { Key?: { pk?: { S?: string } }; TableName?: string } }) => {
    keys.push(command.input.Key?.pk?.S ?? `(no key: ${command.constructor.name})`);
    throw Object.assign(new Error('table down'), { name: 'InternalServerError' });
  };
  return { client: { send, destroy: () => {} } as unknown as DynamoDBClient, keys };
}

async function firstKeys(fleetCap: string): Promise<{ keys: string[]; redelivered: number }> {
  const table = downTable();
  const { handler } = testHandler(
    { SEMAPHORE_TABLE: 'semaphores', FLEET_CAP: fleetCap },
    { clients: { dynamodb: table.client } },
  );
  handlers.push(handler);
  // 10 writes: the tenant takes its prefix's lease.
  const event = sqsEvent(Array.from({ length: 10 }, (_, i) => ({ tenant: 'hot', id: `o-${i}` })));
  const response = await handler(event, lambdaContext(10_000));
  return { keys: table.keys, redelivered: failedIds(response).length };
}

describe('FLEET_CAP with SEMAPHORE_TABLE and no ports given', () => {
  it('rate: the tenant prefix asks its rate budget item, not permits', async () => {
    const { keys, redelivered } = await firstKeys('rate');
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.startsWith('rate#prefix:') && k.endsWith('/t=hot/'))).toBe(true);
    // The budget is unreachable: the tenant's records are redelivered, nothing written unpaced.
    expect(redelivered).toBe(10);
  });

  it('permits (the default): the tenant prefix asks its permit items, never a rate budget', async () => {
    const { keys, redelivered } = await firstKeys('permits');
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.some((k) => k.startsWith('rate#'))).toBe(false);
    expect(redelivered).toBe(10);
  });
});
