import type { SQSRecord } from 'aws-lambda';
import type { ResourceSchema } from '../config.js';
import { InvalidMessageError } from '../errors.js';
import { parseIngestMessage } from '../message/parse.js';
import type { IngestWrite } from '../message/types.js';
import type { WriteOutcome } from './write-outcome.js';

/** One tenant's share of the batch: its writes, as per-record chains. */
export interface TenantPlan {
  readonly tenant: string;
  /** Number of writes (what the tenant's permits are sized for). */
  readonly writes: number;
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
  readonly outcome: Exclude<WriteOutcome, { kind: 'written' }>;
}

export interface BatchPlan {
  readonly unparsed: readonly Unparsed[];
  /** In order of each tenant's first record. */
  readonly tenants: readonly TenantPlan[];
}

const RECORD_SEPARATOR = '\u0000';

/** Parses one record against contract v1: a write, or the outcome of a record that is not one. */
export function parseRecord(
  record: SQSRecord,
  resources: Readonly<Record<string, ResourceSchema>>,
): IngestWrite | Unparsed {
  try {
    return parseIngestMessage(record.body, { messageId: record.messageId, resources });
  } catch (error) {
    if (error instanceof InvalidMessageError) {
      return { messageId: record.messageId, outcome: { kind: 'permanent', reason: error.reason, error } };
    }
    // Not a contract violation but a bug of ours: redeliver rather than dead-letter a possibly good message.
    return { messageId: record.messageId, outcome: { kind: 'transient', cause: 'unexpected', error } };
  }
}

/** Splits one tenant's writes (in message order) into per-record chains, highest first priority first. */
export function chainsOf(writes: readonly IngestWrite[]): IngestWrite[][] {
  const chains = new Map<string, IngestWrite[]>();
  for (const write of writes) {
    const key = `${write.resource}${RECORD_SEPARATOR}${write.id}`;
    const chain = chains.get(key);
    if (chain === undefined) chains.set(key, [write]);
    else chain.push(write);
  }
  return [...chains.values()].sort((a, b) => b[0]!.priority - a[0]!.priority);
}

/**
 * The plan of one batch, a pure function of its records: parse each, group the writes by tenant, chain
 * them per record. Records are walked once; nothing here does I/O or records an outcome.
 */
export function planBatch(
  records: readonly SQSRecord[],
  resources: Readonly<Record<string, ResourceSchema>>,
): BatchPlan {
  const unparsed: Unparsed[] = [];
  const byTenant = new Map<string, IngestWrite[]>();
  // SQS is at-least-once: one message can arrive twice in a batch (same messageId, two receipt handles).
  // Its write is planned once; the ledger keys fates by messageId, so both copies share that one outcome,
  // and no second chain can race the first or settle it twice.
  const seen = new Set<string>();
  for (const record of records) {
    if (seen.has(record.messageId)) continue;
    seen.add(record.messageId);
    const parsed = parseRecord(record, resources);
    if ('outcome' in parsed) {
      unparsed.push(parsed);
      continue;
    }
    const writes = byTenant.get(parsed.tenant);
    if (writes === undefined) byTenant.set(parsed.tenant, [parsed]);
    else writes.push(parsed);
  }
  const tenants = [...byTenant].map(([tenant, writes]) => ({
    tenant,
    writes: writes.length,
    chains: chainsOf(writes),
  }));
  return { unparsed, tenants };
}
