/**
 * The layers of s3-ingest, bottom to top. A file may import its own group and any group of a lower rank;
 * two different groups of one rank are siblings and must not import each other.
 */
export const LAYERS: ReadonlyArray<{ group: string; rank: number; why: string }> = [
  {
    group: 'lib/errors',
    rank: 0,
    why: 'the base error class and the one error taxonomy: everything throws them',
  },
  {
    group: 'lib/backoff',
    rank: 0,
    why: 'the one Backoff (how long to wait before trying again) stands alone: it imports nothing of lib',
  },
  {
    group: 'lib/aws',
    rank: 0,
    why: "facts about AWS services (SQS's limits) that every sender and receiver shares: it imports nothing",
  },
  {
    group: 'lib/pool',
    rank: 1,
    why: 'the executor pool knows tasks, errors and backoffs, nothing about S3 or tenants',
  },
  {
    group: 'lib/semaphore',
    rank: 1,
    why: "the prefixes' rate budgets stand alone: DynamoDB or memory, no pool",
  },
  { group: 'lib/db', rank: 2, why: 'a tenant document store runs its calls through a pool' },
  {
    group: 'lib/ingest',
    rank: 3,
    why: 'the handler wires messages, databases, pools and rate budgets together',
  },
  {
    group: 'lib/index.ts',
    rank: 4,
    why: 'the public API re-exports the Lambda-side layers, never lib/local',
  },
  {
    group: 'lib/local',
    rank: 5,
    why: 'local tooling (emulators, Lambda emulation, demo) drives the real handler',
  },
  { group: 'lib/cli', rank: 6, why: 'the command line runs the local tooling and the producer' },
  { group: 'bin', rank: 7, why: 'the installed command only starts lib/cli' },
  { group: 'functions', rank: 7, why: 'the Lambda entry points wrap lib/ingest and are bundled alone' },
  { group: 'infra', rank: 7, why: 'the CDK app names functions by path, it does not import them' },
  { group: 'bench', rank: 7, why: 'benchmarks drive the library from outside' },
  { group: 'test', rank: 8, why: 'tests may reach every layer, and nothing imports them' },
];

/** The layer group of a repository file: its longest matching prefix in LAYERS, or `undefined`. */
export function groupOf(file: string): { group: string; rank: number } | undefined {
  let best: { group: string; rank: number } | undefined;
  for (const layer of LAYERS) {
    const matches = file === layer.group || file.startsWith(`${layer.group}/`);
    if (matches && (best === undefined || layer.group.length > best.group.length)) best = layer;
  }
  return best;
}
