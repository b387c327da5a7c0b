import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../lib/db/errors.js';
import { openDatabase } from '../../../lib/db/open-database.js';
import type { JsonSchema } from '../../../lib/db/schema.js';
import { ConfigError, loadConfig } from '../../../lib/ingest/index.js';
import type { SchemaWorkerInput, SchemaWorkerResult } from './support/schema-worker.js';

// Issue 14, defect 7: an operator's backtracking `pattern` plus one 32-character value used to run past the
// invocation budget (the deadline timer cannot fire while a regex runs). Schema patterns now run on a
// linear-time engine (RE2 semantics); syntax it cannot run in linear time is refused at config load.

const WORKER = fileURLToPath(new URL('./support/schema-worker.ts', import.meta.url));
/** Far more than a linear-time match of these inputs needs, far less than a backtracking one. */
const BOUND_MS = 10_000;

/** Loads the config and validates one record in a worker; rejects if no answer arrives within the bound. */
async function inWorker(input: SchemaWorkerInput): Promise<SchemaWorkerResult> {
  const worker = new Worker(WORKER, { workerData: input, execArgv: ['--import', 'tsx'] });
  const bound = AbortSignal.timeout(BOUND_MS);
  try {
    const [result] = (await once(worker, 'message', { signal: bound })) as [SchemaWorkerResult];
    return result;
  } catch (err) {
    if (bound.aborted) throw new Error(`no answer within ${BOUND_MS} ms: the pattern backtracked`);
    throw err;
  } finally {
    await worker.terminate();
  }
}

const ENV = { BUCKET_NAME: 'records', DLQ_URL: 'http://127.0.0.1:1/000000000000/dlq' };
const evil = `${'a'.repeat(32)}!`;

describe('operator regexes cannot hang an invocation', () => {
  it('a catastrophic `pattern` (^(a+)+$) against a 32+ character value completes', async () => {
    const result = await inWorker({
      resources: { orders: { type: 'object', properties: { sku: { type: 'string', pattern: '^(a+)+$' } } } },
      resource: 'orders',
      data: { sku: evil },
    });
    expect(result).toEqual({ validated: 'ValidationError' });
  });

  it('a catastrophic `patternProperties` key against a 32+ character property name completes', async () => {
    const result = await inWorker({
      resources: {
        orders: { type: 'object', patternProperties: { '^(a+)+$': { type: 'number' } } },
      },
      resource: 'orders',
      data: { [evil]: 1, [`${'a'.repeat(40)}`]: 'not a number' },
    });
    expect(result).toEqual({ validated: 'ValidationError' });
  });

  it('patterns keep their meaning: a match is accepted, a non-match refused', async () => {
    // Benign patterns: safe to run in this thread whatever the engine.
    const config = loadConfig({
      ...ENV,
      RESOURCES: JSON.stringify({
        orders: {
          type: 'object',
          properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' }, name: { pattern: '^\\p{L}+$' } },
        },
      }),
    });
    const db = openDatabase('memory://records', { tenant: 'acme' });
    const orders = await db.createResource({ name: 'orders', schema: config.resources.orders as JsonSchema });
    await expect(orders.insert({ sku: 'ABC-12', name: 'Zoë' })).resolves.toMatchObject({ sku: 'ABC-12' });
    await expect(orders.insert({ sku: 'abc-12' })).rejects.toThrow(ValidationError);
    await expect(orders.insert({ sku: 'ABC-1', name: 'Zoë1' })).rejects.toThrow(ValidationError);
    await db.disconnect();
  });

  it.each([
    ['a lookahead', '^(?=a)a+$'],
    ['a backreference', '^(a)\\1$'],
  ])('refuses %s at load (no linear-time match exists), naming RESOURCES.<resource>', (_, pattern) => {
    // Refused before anything runs it, so this thread is safe.
    const resources = { orders: { type: 'object', properties: { sku: { type: 'string', pattern } } } };
    let caught: unknown;
    try {
      loadConfig({ ...ENV, RESOURCES: JSON.stringify(resources) });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).key).toBe('RESOURCES.orders');
  });
});
