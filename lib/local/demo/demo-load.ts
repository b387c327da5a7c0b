import type { ProducerWrite } from '../../ingest/message/types.js';
import { InvalidLocalOptionError } from '../errors.js';
import { seededRandom } from '../s3-behaviour/seeded-random.js';

/** The resources the demo declares (`RESOURCES`), all schemaless. */
export const DEMO_RESOURCES = { orders: {}, customers: {} } as const;

/** Fields the demo writes; the verifier checks that exactly the expected ones are present. */
export const DEMO_FIELDS = ['label', 'round', 'amount', 'status'] as const;

/** A record's expected content: the demo fields it must hold. */
export type DemoRecord = Readonly<Partial<Record<(typeof DEMO_FIELDS)[number], string | number>>>;

/** Kinds of permanently bad messages, and the DLQ `reason` the handler is expected to give each. */
export const BAD_KINDS = {
  'invalid-json': 'invalid-json',
  'invalid-tenant': 'invalid-tenant',
  'unknown-resource': 'unknown-resource',
  'forbidden-key': 'forbidden-key',
} as const;
export type BadKind = keyof typeof BAD_KINDS;

/** A raw SQS body that breaks contract v1 (sent around the producer, which would refuse it). */
export interface BadMessage {
  kind: BadKind;
  body: string;
}

/** Writes sent together; the demo drains the queue between rounds, because standard queues do not order. */
export interface DemoRound {
  writes: ProducerWrite[];
  bad: BadMessage[];
}

export interface DemoLoad {
  rounds: DemoRound[];
  /** `t=<tenant>/r=<resource>/id=<id>.json` -> final content, or `null` when the last write deletes it. */
  expected: Map<string, DemoRecord | null>;
  /** Messages in total (good writes + bad messages). */
  messages: number;
  badMessages: number;
  tenants: string[];
}

export interface DemoLoadOptions {
  /** Default 5. */
  tenants?: number;
  /** Messages in total, bad ones included. Default 2,000. */
  messages?: number;
  /** Share of bad messages, 0..1. Default 0.02. */
  badRatio?: number;
  /** Same seed, same load. Default 1. */
  seed?: number;
}

type Step = 'insert' | 'upsert' | 'update' | 'delete';

// Each lifecycle touches one record several times, so a write applied out of order shows in the result.
const LIFECYCLES: readonly (readonly Step[])[] = [
  ['insert', 'update', 'upsert'],
  ['insert', 'update', 'update', 'delete'],
  ['upsert', 'update'],
  ['insert', 'delete'],
  ['upsert', 'upsert', 'update', 'update'],
];

const STATUSES = ['new', 'paid', 'shipped', 'returned'] as const;

export function demoKey(tenant: string, resource: string, id: string): string {
  return `t=${tenant}/r=${resource}/id=${id}.json`;
}

function checkOptions(options: DemoLoadOptions): Required<DemoLoadOptions> {
  const resolved = {
    tenants: options.tenants ?? 5,
    messages: options.messages ?? 2000,
    badRatio: options.badRatio ?? 0.02,
    seed: options.seed ?? 1,
  };
  if (!Number.isInteger(resolved.tenants) || resolved.tenants < 1 || resolved.tenants > 1000) {
    throw new InvalidLocalOptionError('tenants', `must be an integer in 1..1000, got ${resolved.tenants}`);
  }
  if (!Number.isInteger(resolved.messages) || resolved.messages < 0 || resolved.messages > 1_000_000) {
    throw new InvalidLocalOptionError(
      'messages',
      `must be an integer in 0..1000000, got ${resolved.messages}`,
    );
  }
  if (!(resolved.badRatio >= 0 && resolved.badRatio <= 1)) {
    throw new InvalidLocalOptionError('badRatio', `must be in 0..1, got ${resolved.badRatio}`);
  }
  return resolved;
}

function badMessage(kind: BadKind, n: number, tenant: string): BadMessage {
  switch (kind) {
    case 'invalid-json':
      return { kind, body: `{"v":1,"tenant":"${tenant}","resource":"orders","op":"upsert","id":"bad-${n}",` };
    case 'invalid-tenant':
      return {
        kind,
        body: JSON.stringify({
          v: 1,
          tenant: `../Bad Tenant ${n}`,
          resource: 'orders',
          op: 'upsert',
          id: `bad-${n}`,
          data: {},
        }),
      };
    case 'unknown-resource':
      return {
        kind,
        body: JSON.stringify({
          v: 1,
          tenant,
          resource: 'invoices',
          op: 'upsert',
          id: `bad-${n}`,
          data: { n },
        }),
      };
    case 'forbidden-key':
      // Written by hand: JSON.stringify of an object literal cannot produce an own `__proto__` key.
      return {
        kind,
        body: `{"v":1,"tenant":"${tenant}","resource":"orders","op":"upsert","id":"bad-${n}","data":{"x":{"__proto__":{"polluted":${n}}}}}`,
      };
  }
}

/**
 * A deterministic demo load: record lifecycles (insert/upsert, updates, some deletes) spread over tenants
 * and resources, one write per record per round, plus bad messages of a few kinds; and the final state
 * every record must reach.
 */
export function generateDemoLoad(options: DemoLoadOptions = {}): DemoLoad {
  const { tenants: tenantCount, messages, badRatio, seed } = checkOptions(options);
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const tenants = Array.from({ length: tenantCount }, (_, i) => `tenant-${String(i).padStart(2, '0')}`);
  const resources = Object.keys(DEMO_RESOURCES);
  const badCount = Math.round(messages * badRatio);
  let goodLeft = messages - badCount;

  const rounds: DemoRound[] = [];
  const roundOf = (k: number): DemoRound => {
    while (rounds.length <= k) rounds.push({ writes: [], bad: [] });
    return rounds[k]!;
  };
  const expected = new Map<string, DemoRecord | null>();
  for (let n = 0; goodLeft > 0; n++) {
    const tenant = pick(tenants);
    const resource = pick(resources);
    const id = `rec-${n}`;
    const steps = pick(LIFECYCLES).slice(0, goodLeft);
    goodLeft -= steps.length;
    let state: DemoRecord | null = null;
    steps.forEach((op, round) => {
      const amount = Math.floor(random() * 10_000);
      let write: ProducerWrite;
      switch (op) {
        case 'insert':
        case 'upsert':
          state = { label: `${op}-${id}`, round, amount };
          write = { tenant, resource, op, id, data: state };
          break;
        case 'update': {
          const patch = { round, status: pick(STATUSES) };
          state = { ...(state ?? {}), ...patch };
          write = { tenant, resource, op, id, data: patch };
          break;
        }
        case 'delete':
          state = null;
          write = { tenant, resource, op, id };
          break;
      }
      roundOf(round).writes.push(write);
    });
    expected.set(demoKey(tenant, resource, id), state);
  }
  const kinds = Object.keys(BAD_KINDS) as BadKind[];
  for (let n = 0; n < badCount; n++) {
    roundOf(n % Math.max(1, rounds.length)).bad.push(badMessage(kinds[n % kinds.length]!, n, pick(tenants)));
  }
  // Shuffle each round so tenants interleave as they would in real traffic.
  for (const round of rounds) {
    for (let i = round.writes.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [round.writes[i], round.writes[j]] = [round.writes[j]!, round.writes[i]!];
    }
  }
  return { rounds, expected, messages, badMessages: badCount, tenants };
}
