import type { SQSRecord } from 'aws-lambda';
import type { ResourceSchema } from '../../config.js';
import { InvalidMessageError } from '../../errors.js';
import { parseIngestMessage } from '../../message/parse.js';
import type { IngestWrite } from '../../message/types.js';
import type { WriteOutcome } from '../run/write-outcome.js';
import { deferralsOf, originOf, originSentOf } from '../settle/deferral-port.js';
import { FifoGroupGate } from './fifo-groups.js';
import { messageGroupOf } from './message-group.js';
import type { SourceBinding } from './source-binding.js';

/** One tenant's share of the batch: its writes, as per-record chains. */
export interface TenantPlan {
  readonly tenant: string;
  /** Number of writes (what the tenant's permits are sized for). */
  readonly writes: number;
  /** The most times SQS delivered any of its records (`ApproximateReceiveCount`, 1 when absent). */
  readonly receives: number;
  /** The most times any of its records was deferred already (`s3-ingest-deferrals`, 0 when none). */
  readonly deferrals: number;
  /** Whether any of its records belongs to a FIFO message group (those cannot be deferred out of order). */
  readonly ordered: boolean;
  /**
   * One chain per record `(resource, id)`, its writes in message order. Chains are ordered by their first
   * write's priority, highest first (stable for equal ones): the pool starts the first enqueued write at
   * once when it has a free slot, so starting in message order would let a low-priority first message jump
   * ahead of every higher-priority one.
   */
  readonly chains: readonly (readonly IngestWrite[])[];
}

/** A record that never becomes a write, and why. */
export interface Unparsed {
  readonly messageId: string;
  /** `permanent` (a contract violation, dead-lettered) or `transient` (a bug of ours: redelivered). */
  readonly outcome: Extract<WriteOutcome, { kind: 'permanent' | 'transient' }>;
  /** The tenant, when the message named a valid one (it goes into the dead letter). */
  readonly tenant?: string;
}

export interface BatchPlan {
  readonly unparsed: readonly Unparsed[];
  /** In order of each tenant's first record. */
  readonly tenants: readonly TenantPlan[];
}

/** What the plan checks besides the message contract. */
export interface PlanOptions {
  /**
   * Which tenants each source queue may write (tenant-bound producers): a write outside its source's tenants, or from a
   * source not bound at all, is refused before any write.
   * @default undefined (single-queue mode: any tenant from any source)
   * @example { binding: new SourceBinding(config.sourceTenants) }
   */
  readonly binding?: SourceBinding;
}

/** A parsed write that its source may not make becomes a refusal; anything else passes through. */
function admitRecord(
  record: SQSRecord,
  parsed: IngestWrite | Unparsed,
  options: PlanOptions,
): IngestWrite | Unparsed {
  if ('outcome' in parsed || options.binding === undefined) return parsed;
  const refused = options.binding.check(record.eventSourceARN, parsed.tenant);
  return refused === undefined
    ? parsed
    : {
        messageId: record.messageId,
        outcome: { kind: 'permanent', reason: refused.reason, error: refused },
        tenant: parsed.tenant,
      };
}

const RECORD_SEPARATOR = '\u0000';

/** Parses one record against contract v1: a write, or the outcome of a record that is not one. */
export function parseRecord(
  record: SQSRecord,
  resources: Readonly<Record<string, ResourceSchema>>,
): IngestWrite | Unparsed {
  try {
    // A deferred copy keeps its origin's data identity: the id an insert derives, the `seq` and its tie.
    const originId = originOf(record);
    const write = parseIngestMessage(record.body, {
      messageId: originId,
      resources,
      sentTimestamp: originSentOf(record),
    });
    return originId === record.messageId ? write : { ...write, messageId: record.messageId, originId };
  } catch (error) {
    if (error instanceof InvalidMessageError) {
      return { messageId: record.messageId, outcome: { kind: 'permanent', reason: error.reason, error } };
    }
    // Not a contract violation but a bug of ours: redeliver rather than dead-letter a possibly good message.
    return { messageId: record.messageId, outcome: { kind: 'transient', cause: 'unexpected', error } };
  }
}

/**
 * Splits one tenant's writes (in message order) into chains, highest first priority first and, among equal
 * priorities, the chains whose messages SQS delivered most often first (`receivesOf`): when a tenant cannot
 * write all of its batch before the cutoff (its prefix's rate), the records it hands back are the ones with
 * receives to spare, not the ones one more receive sends to the dead-letter queue. Writes to the same record
 * `(resource, id)` share a chain; so do writes of the same FIFO message group (`groupOf`), and chains that
 * share either are one chain: its writes run one after another in message order, and a transient failure
 * blocks the rest of it, which keeps both the record's order and the group's.
 */
export function chainsOf(
  writes: readonly IngestWrite[],
  groupOf: (messageId: string) => string | undefined = () => undefined,
  receivesOf: (messageId: string) => number = () => 1,
): IngestWrite[][] {
  // Union-find over write indexes: each key (record, group) links a write to the first write holding it.
  const parent = writes.map((_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  const firstWith = new Map<string, number>();
  const link = (key: string, i: number) => {
    const first = firstWith.get(key);
    if (first === undefined) firstWith.set(key, i);
    else parent[root(i)] = root(first);
  };
  writes.forEach((write, i) => {
    link(`r${RECORD_SEPARATOR}${write.resource}${RECORD_SEPARATOR}${write.id}`, i);
    const group = groupOf(write.messageId);
    if (group !== undefined) link(`g${RECORD_SEPARATOR}${group}`, i);
  });
  const chains = new Map<number, IngestWrite[]>();
  writes.forEach((write, i) => {
    const r = root(i);
    const chain = chains.get(r);
    if (chain === undefined) chains.set(r, [write]);
    else chain.push(write);
  });
  const mostReceived = (chain: readonly IngestWrite[]) =>
    chain.reduce((most, w) => Math.max(most, receivesOf(w.messageId)), 0);
  // Array.prototype.sort is stable: equal chains keep message order.
  return [...chains.values()]
    .map((chain) => ({ chain, receives: mostReceived(chain) }))
    .sort((a, b) => b.chain[0]!.priority - a.chain[0]!.priority || b.receives - a.receives)
    .map(({ chain }) => chain);
}

/** SQS's `ApproximateReceiveCount` of a record (1 when absent or unreadable). */
function receiveCountOf(record: SQSRecord): number {
  const n = Number(record.attributes?.ApproximateReceiveCount);
  return Number.isFinite(n) && n >= 1 ? n : 1;
}

/**
 * The plan of one batch, a pure function of its records: parse each, group the writes by tenant, chain
 * them per record. Records are walked once; nothing here does I/O or records an outcome.
 */
export function planBatch(
  records: readonly SQSRecord[],
  resources: Readonly<Record<string, ResourceSchema>>,
  options: PlanOptions = {},
): BatchPlan {
  const unparsed: Unparsed[] = [];
  const byTenant = new Map<string, IngestWrite[]>();
  // SQS is at-least-once: one message can arrive twice in a batch (same messageId, two receipt handles).
  // Its write is planned once; the ledger keys fates by messageId, so both copies share that one outcome,
  // and no second chain can race the first or settle it twice.
  const seen = new Set<string>();
  // FIFO queues: a message group's later messages wait for its earlier ones (fifo-groups.ts).
  const groups = new Map<string, string>();
  const receives = new Map<string, number>();
  const deferrals = new Map<string, number>();
  const gate = new FifoGroupGate();
  for (const record of records) {
    if (seen.has(record.messageId)) continue;
    seen.add(record.messageId);
    receives.set(record.messageId, receiveCountOf(record));
    deferrals.set(record.messageId, deferralsOf(record));
    const group = messageGroupOf(record);
    if (group !== undefined) groups.set(record.messageId, group);
    const parsed = admitRecord(record, parseRecord(record, resources), options);
    if ('outcome' in parsed) {
      unparsed.push(parsed);
      gate.refuse(group, record.messageId, parsed.outcome);
      continue;
    }
    const held = gate.admit(group, record.messageId, parsed.tenant);
    if (held !== undefined) {
      unparsed.push({ messageId: record.messageId, outcome: held, tenant: parsed.tenant });
      continue;
    }
    const writes = byTenant.get(parsed.tenant);
    if (writes === undefined) byTenant.set(parsed.tenant, [parsed]);
    else writes.push(parsed);
  }
  const tenants = [...byTenant].map(([tenant, writes]) => ({
    tenant,
    writes: writes.length,
    receives: Math.max(...writes.map((w) => receives.get(w.messageId) ?? 1)),
    deferrals: Math.max(...writes.map((w) => deferrals.get(w.messageId) ?? 0)),
    ordered: writes.some((w) => groups.has(w.messageId)),
    chains: chainsOf(
      writes,
      (messageId) => groups.get(messageId),
      (messageId) => receives.get(messageId) ?? 1,
    ),
  }));
  return { unparsed, tenants };
}
