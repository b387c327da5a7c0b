// What the in-process store needs from a model of S3's behaviour (latency, throttling, faults). Declared
// here, beside the store that consumes it, so lib/db depends on no implementation: lib/local's
// `S3BehaviourModel` implements it, and Lambda code never bundles the model.

/** PUT/DELETE are writes; GET/HEAD/LIST are reads (S3 limits them separately). */
export type StorageRequestKind = 'read' | 'write';

/** What the modelled storage does with one request. */
export type StorageOutcome = 'ok' | 'slowdown' | 'internal-error' | 'reset' | 'stall';

export interface StorageDecision {
  readonly outcome: StorageOutcome;
  /** How long to wait before answering (for `'stall'`: how long the stall lasts before the peer drops it). */
  readonly latencyMs: number;
}

/** The time source the model's latencies are waited on (virtual in tests and benchmarks). */
export interface BehaviourClock {
  now(): number;
  /** Resolves after `ms`; rejects with `signal.reason` when the signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Decides the fate of each request a `MemoryObjectStore` serves. */
export interface BehaviourModel {
  readonly clock: BehaviourClock;
  decide(kind: StorageRequestKind, key: string): StorageDecision;
}
