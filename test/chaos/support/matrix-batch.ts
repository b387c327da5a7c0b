// The batch a fault-matrix cell sends: per record a chain of two writes that makes every S3 call the
// handler has happen (PUT, GET of an update's read, a delete's tombstone PUT), plus bad messages for the dead-letter send,
// in a seeded interleaving that keeps each record's own order. It also knows every state a record may be
// in after a prefix of its chain, which is what the invariants compare S3 against.
import type { SQSRecord } from 'aws-lambda';
import { SEQ_FIELD } from '../../../lib/db/sequenced-state.js';
import { seededRandom } from '../../../lib/local/s3-behaviour/seeded-random.js';
import { body, sqsRecord } from '../../unit/ingest/handler/support.js';

export const MATRIX_TENANT = 'acme';
export const MATRIX_RESOURCE = 'orders';

type Op = 'insert' | 'upsert' | 'update' | 'delete';

export interface MatrixWrite {
  readonly record: string;
  /** Position in its record's chain (0-based). */
  readonly index: number;
  readonly op: Op;
  readonly data?: Record<string, unknown>;
  readonly message: SQSRecord;
}

export interface MatrixBatch {
  /** Every message in delivery order. */
  readonly messages: readonly SQSRecord[];
  /** Per record, its writes in chain order. */
  readonly chains: ReadonlyMap<string, readonly MatrixWrite[]>;
  /** Write of each message id (absent for the bad messages). */
  readonly writeOf: ReadonlyMap<string, MatrixWrite>;
  /** Message ids the handler must dead-letter (contract violations), with the reason it must give. */
  readonly bad: ReadonlyMap<string, string>;
}

/** Chain shapes: which S3 calls each one makes (fauxqs enforces no conditions, so no 412 paths here). */
const CHAINS: readonly ((n: number) => { op: Op; data?: Record<string, unknown> }[])[] = [
  // PUT (If-None-Match), then GET + PUT (If-Match)
  (n) => [
    { op: 'insert', data: { step: 1, total: n, status: 'created' } },
    { op: 'update', data: { step: 2, status: 'shipped' } },
  ],
  // PUT, then the delete's tombstone PUT
  (n) => [{ op: 'upsert', data: { step: 1, total: n } }, { op: 'delete' }],
  // PUT, then GET + PUT
  (n) => [
    { op: 'upsert', data: { step: 1, total: n, status: 'created' } },
    { op: 'update', data: { step: 2, status: 'paid' } },
  ],
];

const BAD_MESSAGES: readonly [string, string][] = [
  ['{"v":1,', 'invalid-json'],
  [body({ tenant: MATRIX_TENANT, resource: 'unknown-things', id: 'x-1' }), 'unknown-resource'],
  [body({ tenant: 'Not A Tenant', id: 'x-2' }), 'invalid-tenant'],
];

/**
 * `records` records (at least 5, so the tenant has `SMALL_TENANTS.writes` (10) writes and books slots in
 * its prefix's schedule rather than writing unbooked in the small tenants' lanes), `bad` bad messages, shuffled by `seed` with each chain in order.
 */
export function matrixBatch(options: { records: number; bad: number; seed: number }): MatrixBatch {
  const random = seededRandom(options.seed);
  const queues: MatrixWrite[][] = [];
  const chains = new Map<string, MatrixWrite[]>();
  const writeOf = new Map<string, MatrixWrite>();
  for (let r = 0; r < options.records; r++) {
    const record = `r${options.seed}-${r}`;
    const shape = CHAINS[r % CHAINS.length]!(1 + Math.floor(random() * 1000));
    const chain = shape.map(({ op, data }, index): MatrixWrite => {
      const message = sqsRecord(
        body({ tenant: MATRIX_TENANT, resource: MATRIX_RESOURCE, op, id: record, ...(data ? { data } : {}) }),
      );
      const write: MatrixWrite = { record, index, op, ...(data ? { data } : {}), message };
      writeOf.set(message.messageId, write);
      return write;
    });
    chains.set(record, chain);
    queues.push([...chain]);
  }
  const bad = new Map<string, string>();
  const badMessages: SQSRecord[] = [];
  for (let i = 0; i < options.bad; i++) {
    const [text, reason] = BAD_MESSAGES[i % BAD_MESSAGES.length]!;
    const message = sqsRecord(text);
    bad.set(message.messageId, reason);
    badMessages.push(message);
  }
  // Seeded interleaving: repeatedly take the head of a random non-empty chain (or a bad message).
  const messages: SQSRecord[] = [];
  for (;;) {
    const open = queues.filter((q) => q.length > 0);
    const pickBad =
      badMessages.length > 0 && random() < badMessages.length / (badMessages.length + open.length + 1);
    if (pickBad || open.length === 0) {
      const next = badMessages.shift();
      if (next === undefined) break;
      messages.push(next);
      continue;
    }
    messages.push(open[Math.floor(random() * open.length)]!.shift()!.message);
  }
  return { messages, chains, writeOf, bad };
}

/** The user content of a record after applying the first `m` writes of its chain; undefined = absent. */
export function stateAfter(chain: readonly MatrixWrite[], m: number): Record<string, unknown> | undefined {
  let state: Record<string, unknown> | undefined;
  for (const write of chain.slice(0, m)) {
    if (write.op === 'delete') state = undefined;
    // Issue 15: an update of a record that does not exist is kept pending (hidden), so the record stays absent.
    else if (write.op === 'update') state = state === undefined ? undefined : { ...state, ...write.data };
    else state = { ...write.data };
  }
  return state;
}

const SYSTEM_FIELDS = new Set(['id', 'createdAt', 'updatedAt', 'version', SEQ_FIELD]);

/** Stable text of a record's user fields (top-level system fields left out), or `absent`. */
export function contentKey(record: Record<string, unknown> | undefined): string {
  if (record === undefined) return 'absent';
  const entries = Object.keys(record)
    .filter((k) => !SYSTEM_FIELDS.has(k))
    .sort()
    .map((k) => [k, record[k]]);
  return JSON.stringify(entries);
}
