import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../../../lib/db/database.js';
import { MemoryObjectStore } from '../../../../../lib/db/memory-object-store.js';
import {
  type ObjectStore,
  PreconditionFailedError,
  type PutObjectInput,
  type StoreCallOptions,
  type StoredObject,
} from '../../../../../lib/db/object-store.js';
import { S3ObjectStore } from '../../../../../lib/db/s3-object-store.js';
import { isTransient } from '../../../../../lib/errors/index.js';
import { applyWrite } from '../../../../../lib/ingest/handler/run/apply-write.js';
import type { IngestWrite } from '../../../../../lib/ingest/message/types.js';
import { ExecutorPool } from '../../../../../lib/pool/index.js';

// Issue 14, defects 1 and 2: S3's 409 is "retry", not "exists"; a concurrent delete between the 412 and the
// read-back is a retry, not `record-not-found`; only top-level system fields are ignored when an explicit-id
// insert is compared with what is stored.

/** S3's answer to a conditional write racing another one, as the SDK hands it over. */
function conditionalRequestConflict(): Error {
  return Object.assign(new Error('A conflicting conditional operation is in progress'), {
    name: 'ConditionalRequestConflict',
    $fault: 'client',
    $metadata: { httpStatusCode: 409 },
  });
}

/** S3's answer to a read of a missing key. */
function noSuchKey(): Error {
  return Object.assign(new Error('The specified key does not exist.'), {
    name: 'NoSuchKey',
    $fault: 'client',
    $metadata: { httpStatusCode: 404 },
  });
}

/** An S3Client that answers every PutObject with a 409 and every other request with a 404. */
function conflictingS3Client(): S3Client {
  const send = async (command: { constructor: { name: string } }) =>
    Promise.reject(
      command.constructor.name === 'PutObjectCommand' ? conditionalRequestConflict() : noSuchKey(),
    );
  return { config: {}, send } as unknown as S3Client;
}

async function ordersOn(store: ObjectStore) {
  // No retries: the outcome of one attempt is what is classified.
  const db = new Database({ tenant: 'acme', store, pool: new ExecutorPool({ concurrency: 4, retries: 0 }) });
  return db.createResource({ name: 'orders' });
}

const signal = new AbortController().signal;

let sent = 0;

function insert(
  id: string,
  idSource: 'message' | 'key' | 'message-id',
  data: Record<string, unknown>,
): IngestWrite {
  return {
    op: 'insert',
    tenant: 'acme',
    resource: 'orders',
    id,
    idSource,
    data,
    priority: 0,
    // Distinct messages: each its own message id and seq (one message id would be one message redelivered).
    messageId: `m-${++sent}`,
    seq: sent,
    seqSource: 'message',
  } as IngestWrite;
}

describe('applyWrite at the seams', () => {
  it('S3ObjectStore: 409 ConditionalRequestConflict is a transient error, not a precondition failure', async () => {
    const store = new S3ObjectStore(conflictingS3Client(), 'bucket');
    const failure = await store.put({ key: 'k', body: '{}', ifNoneMatch: '*' }).catch((e: unknown) => e);
    expect(failure).not.toBeInstanceOf(PreconditionFailedError);
    expect(isTransient(failure)).toBe(true);
  });

  it('a derived-id insert answered 409 is redelivered, not acknowledged with nothing written', async () => {
    const orders = await ordersOn(new S3ObjectStore(conflictingS3Client(), 'bucket'));
    const outcome = await applyWrite(orders, insert('d-1', 'key', { total: 1 }), signal);
    expect(outcome.kind).toBe('transient');
  });

  it('an explicit-id insert answered 409 is redelivered, not dead-lettered as record-not-found', async () => {
    const orders = await ordersOn(new S3ObjectStore(conflictingS3Client(), 'bucket'));
    const outcome = await applyWrite(orders, insert('o-1', 'message', { total: 1 }), signal);
    expect(outcome.kind).toBe('transient');
  });

  it('an explicit-id insert whose record is deleted between the 412 and the read-back is redelivered', async () => {
    // The object exists when the insert is tried (412), and is gone when it is read back.
    const inner = new MemoryObjectStore({ bucket: `apply-write-${Date.now()}` });
    const racing: ObjectStore = Object.assign(Object.create(inner) as ObjectStore, {
      put: async (input: PutObjectInput): Promise<{ etag: string }> => {
        throw new PreconditionFailedError(input.key, 'if-none-match');
      },
      get: async (_key: string, _options?: StoreCallOptions): Promise<StoredObject | undefined> => undefined,
    });
    const orders = await ordersOn(racing);
    const outcome = await applyWrite(orders, insert('o-2', 'message', { total: 1 }), signal);
    expect(outcome).toMatchObject({ kind: 'transient', cause: 'storage' });
  });

  it('an explicit-id insert differing only in a nested `id` is record-exists, not silently dropped', async () => {
    const orders = await ordersOn(new MemoryObjectStore({ bucket: `apply-write-nested-${Date.now()}` }));
    const first = await applyWrite(orders, insert('o-3', 'message', { line: { id: 'a', qty: 1 } }), signal);
    expect(first.kind).toBe('written');
    const same = await applyWrite(orders, insert('o-3', 'message', { line: { qty: 1, id: 'a' } }), signal);
    expect(same.kind).toBe('written');
    const nested = await applyWrite(orders, insert('o-3', 'message', { line: { id: 'b', qty: 1 } }), signal);
    expect(nested).toMatchObject({ kind: 'permanent', reason: 'record-exists' });
  });
});
