import type { S3Client } from '@aws-sdk/client-s3';

/**
 * Counts S3 requests in flight on one client (one Lambda container), and how far they ever went beyond a
 * bound read at request start (the semaphore permits the container holds). The handler's tenant pools are
 * internal to it, so this is measured one level below them: every pool task is exactly one S3 request, and
 * a request is counted from `send` until it settles (an aborted one until its abort has landed), so the
 * count can only be >= what the pools report as active.
 */
export class InFlightGauge {
  #now = 0;
  #peak = 0;
  #peakOver = Number.NEGATIVE_INFINITY;

  constructor(private readonly bound: () => number) {}

  /** Adds the counting middleware to `client` (outermost step, so it spans the whole request). */
  attach(client: S3Client): void {
    client.middlewareStack.add(
      (next) => async (args) => {
        this.#now++;
        this.#peak = Math.max(this.#peak, this.#now);
        this.#peakOver = Math.max(this.#peakOver, this.#now - this.bound());
        try {
          return await next(args);
        } finally {
          this.#now--;
        }
      },
      { step: 'initialize', name: 'chaosInFlightGauge', priority: 'high' },
    );
  }

  /** Peaks since the last call, then starts new ones from the requests in flight now. */
  takePeaks(): { peakInFlight: number; peakOverPermits: number } {
    const peaks = {
      peakInFlight: this.#peak,
      peakOverPermits: this.#peakOver === Number.NEGATIVE_INFINITY ? 0 : this.#peakOver,
    };
    this.#peak = this.#now;
    this.#peakOver = Number.NEGATIVE_INFINITY;
    return peaks;
  }
}
