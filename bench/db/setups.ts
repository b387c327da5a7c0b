// What bench:db compares, shared by the parent (bench/db.ts) and each round's child (engine.ts). A module
// of its own: importing the engine would run a whole round in the parent.
export const CLIENT_SETUPS = [
  'per-call-signal',
  'scoped-signal',
  'checksums-when-required',
  'unused-middlewares-dropped',
  'signer-reused',
  'sha256-key-cache',
  'signing-key-reused',
  'create-s3-client',
] as const;
export type ClientSetup = (typeof CLIENT_SETUPS)[number];

export interface DbSetupResult {
  setup: ClientSetup;
  writes: number;
  cpuUsPerWrite: number;
  writesPerSec: number;
}
