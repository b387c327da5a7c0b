import { setTimeout as sleep } from 'node:timers/promises';

/** Time as the `dlq` commands read it: injectable, so tests measure pacing and scan length without sleeping. */
export interface Clock {
  /** Epoch milliseconds (compared with SQS's `SentTimestamp`). */
  now(): number;
  /** Resolves after `ms`; rejects with an `AbortError` when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The process's clock and timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: async (ms, signal) => {
    await sleep(ms, undefined, signal === undefined ? undefined : { signal });
  },
};
