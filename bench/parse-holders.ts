// npm run bench:parse-holders — `parseHolders` (lib/semaphore/shard-table.ts) against its previous form,
// side by side in one process, rounds interleaved: the ratio is the figure, not the microseconds.
//
// Why: in bench:fleet's c1000-t10000-zipf tail every waiting acquirer's survey parses every holder entry
// of the hot prefix's shard items (~80 per item), and that one function was 12.7% of the simulator's CPU
// (docs/fleet-simulation.md, the profile by window); a real Lambda's survey parses the same items.
// Inputs: shard items of 20 and 80 holders (80% of them with an announced `due`), as the SDK unmarshals
// them (plain objects) and as the fleet's DynamoDB model hands them out (frozen).
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { seededRandom } from '../lib/local/s3-behaviour/seeded-random.js';
import { type HolderEntry, parseHolders } from '../lib/semaphore/shard-table.js';
import { type Row, writeResults } from './support/report.js';

/** `parseHolders` before this benchmark: `Object.entries` pairs and a spread for the optional `due`. */
function previousParseHolders(raw: Record<string, AttributeValue>): Map<string, HolderEntry> {
  const holders = new Map<string, HolderEntry>();
  for (const [fence, value] of Object.entries(raw.holders?.M ?? {})) {
    const due = value.M?.due?.N;
    holders.set(fence, {
      n: Number(value.M?.n?.N ?? 0),
      until: Number(value.M?.until?.N ?? 0),
      ...(due === undefined ? {} : { due: Number(due) }),
    });
  }
  return holders;
}

const random = seededRandom(1);
const fence = () =>
  Array.from(
    { length: 16 },
    () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[Math.floor(random() * 64)],
  ).join('');

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** A shard item of `holders` entries as DynamoDB returns it (leases of 1-3 sixty-fourths to a few permits). */
function shardItem(holders: number, frozen: boolean): Record<string, AttributeValue> {
  const now = 1_796_107_789_232;
  const entries: Record<string, AttributeValue> = {};
  for (let i = 0; i < holders; i++) {
    const entry: Record<string, AttributeValue> = {
      n: { N: String(Math.ceil(random() * 192) / 64) },
      until: { N: String(now + Math.floor(random() * 60_000)) },
    };
    if (i < holders * 0.8) entry.due = { N: String(now + Math.floor(random() * 5_000)) };
    entries[fence()] = { M: entry };
  }
  const item: Record<string, AttributeValue> = {
    pk: { S: 'sem#prefix:fleet-bucket/t=0' },
    sk: { S: 'adaptive#0' },
    capacity: { N: '47.25' },
    free: { N: '0.5' },
    shards: { N: '2' },
    holders: { M: entries },
  };
  return frozen ? deepFreeze(item) : item;
}

const peers = [
  { name: 'parseHolders (lib)', parse: parseHolders },
  { name: 'previous (Object.entries + spread)', parse: previousParseHolders },
] as const;

// The two must agree on every input before their speed means anything.
const rows: Row[] = [];
for (const holders of [20, 80]) {
  for (const frozen of [false, true]) {
    const items = Array.from({ length: 16 }, () => shardItem(holders, frozen));
    for (const item of items) {
      const [a, b] = peers.map((p) => JSON.stringify([...p.parse(item)]));
      if (a !== b)
        throw new Error(`parseHolders and its previous form disagree on an item of ${holders} holders`);
    }
    const parses = Math.round(64_000 / holders);
    const samples = peers.map(() => [] as number[]);
    let sink = 0;
    // Short rounds, interleaved, the order swapped each round: the machine's load moves both peers of a
    // round alike, so each round gives a ratio and the median of those is the figure. The first 10 rounds
    // warm the JIT up.
    for (let round = 0; round < 110; round++) {
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const peer = peers[i]!;
        const started = process.hrtime.bigint();
        for (let k = 0; k < parses; k++) sink += peer.parse(items[k & 15]!).size;
        if (round >= 10) samples[i]!.push(Number(process.hrtime.bigint() - started) / 1e3 / parses);
      }
    }
    if (sink === 0) throw new Error('nothing parsed');
    const median = (values: readonly number[]) => [...values].sort((x, y) => x - y)[values.length >> 1]!;
    const [lib, previous] = samples as [number[], number[]];
    const ratio = median(previous.map((p, r) => p / lib[r]!));
    rows.push({
      item: `${holders} holders, ${frozen ? 'frozen (the fleet model)' : 'plain (the SDK)'}`,
      'lib µs/parse': Math.round(median(lib) * 100) / 100,
      'previous µs/parse': Math.round(median(previous) * 100) / 100,
      'previous / lib (median of rounds)': Math.round(ratio * 100) / 100,
    });
  }
}
writeResults('parse-holders', rows, {
  method:
    "one process, 100 measured rounds (after 10 warm-up rounds), the two peers back to back in each, order swapped each round; µs per parse: medians; ratio: median of the rounds' ratios (the figure)",
});
