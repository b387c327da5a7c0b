import { ConflictError, RecordExistsError, RecordNotFoundError, ValidationError } from '../../db/errors.js';
import type { Document, Resource, StoredRecord } from '../../db/resource.js';
import { isTransient } from '../../errors/index.js';
import type { IngestWrite, JsonObject } from '../message/types.js';
import { RecordVanishedError } from './errors.js';
import { WRITTEN, type WriteOutcome } from './write-outcome.js';

/** Fields the store sets on every record; only these, and only at the top level, are not user content. */
const SYSTEM_FIELDS = new Set(['id', 'createdAt', 'updatedAt', 'version']);

/** Stable JSON (sorted keys), so two deliveries of the same data compare equal whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The user's fields of a record: the top-level system fields dropped, nested `id`s and the like kept. */
function userContent(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const key of Object.keys(record)) if (!SYSTEM_FIELDS.has(key)) content[key] = record[key];
  return content;
}

function sameContent(stored: StoredRecord<Document>, data: JsonObject): boolean {
  return canonical(userContent(stored)) === canonical(userContent(data));
}

/**
 * Applies one write through the tenant's pool and classifies the result. `signal` is the invocation's
 * deadline: aborting it rejects the write whether it is queued or in flight.
 *
 * Idempotence under redelivery: an insert whose id was derived from the message (`key` or SQS message id)
 * and that finds the object already there was applied by an earlier delivery, so it counts as written.
 * An explicit-id insert that finds the same content also counts as written; different content is a
 * permanent `record-exists`.
 */
export async function applyWrite(
  resource: Resource<Document>,
  write: IngestWrite,
  signal: AbortSignal,
): Promise<WriteOutcome> {
  const call = { priority: write.priority, signal };
  try {
    switch (write.op) {
      case 'insert':
        try {
          await resource.insert(write.data as Document, { ...call, id: write.id });
        } catch (err) {
          if (!(err instanceof RecordExistsError)) throw err;
          if (write.idSource !== 'message') return WRITTEN;
          const stored = await resource.get(write.id, call).catch((readError: unknown) => {
            // Deleted between the 412 and this read: the insert may now succeed, so it is tried again later.
            if (readError instanceof RecordNotFoundError) throw new RecordVanishedError(write.id, readError);
            throw readError;
          });
          if (sameContent(stored, write.data)) return WRITTEN;
          return { kind: 'permanent', reason: 'record-exists', error: err };
        }
        return WRITTEN;
      case 'upsert':
        await resource.upsert(write.id, write.data as Document, call);
        return WRITTEN;
      case 'update':
        await resource.update(write.id, write.data as Partial<Document>, call);
        return WRITTEN;
      case 'delete':
        await resource.delete(write.id, call);
        return WRITTEN;
    }
  } catch (err) {
    return classifyFailure(err, signal);
  }
}

/**
 * Permanent only when retrying can never help (the data is invalid, the record to update is missing);
 * anything else is redelivered, so nothing is lost. The error taxonomy tells a storage failure (throttling,
 * timeouts, 5xx, resets, a concurrent change) from an unexpected one, which is redelivered all the same
 * but reported as a bug.
 */
export function classifyFailure(err: unknown, signal: AbortSignal): WriteOutcome {
  if (err instanceof ValidationError) return { kind: 'permanent', reason: 'schema-violation', error: err };
  if (err instanceof RecordNotFoundError)
    return { kind: 'permanent', reason: 'record-not-found', error: err };
  if (signal.aborted) return { kind: 'transient', cause: 'deadline', error: err };
  if (err instanceof ConflictError || err instanceof RecordVanishedError || isTransient(err))
    return { kind: 'transient', cause: 'storage', error: err };
  return { kind: 'transient', cause: 'unexpected', error: err };
}
