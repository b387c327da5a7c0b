import type { S3Client } from '@aws-sdk/client-s3';

/**
 * How many requests a tenant prefix may have in flight in one container (`name` is the handler's budget name
 * for it): its holder's pool concurrency while it has one (booked in the invocation), else (a tenant with
 * few writes in the batch writes unbooked) fewer than `SMALL_TENANTS.writes`.
 */
export type PrefixBound = (name: string) => number;

/**
 * Counts S3 requests in flight on one client (one Lambda container), per tenant prefix, and how far they
 * ever went beyond the prefix's bound read at request start. The handler's tenant pools are internal to it,
 * so this is measured one level below them: every pool task is exactly one S3 request, and a request is
 * counted from `send` until it settles (an aborted one until its abort has landed), so the count can only
 * be >= what the pools report as active.
 */
export class InFlightGauge {
  #now = 0;
  #peak = 0;
  #peakOver = Number.NEGATIVE_INFINITY;
  /** Where the peak over its bound was: the prefix and its bound then (what a failing check prints). */
  #peakOverAt = '';
  readonly #byPrefix = new Map<string, number>();

  constructor(private readonly bound: PrefixBound) {}

  /** Adds the counting middleware to `client` (outermost step, so it spans the whole request). */
  attach(client: S3Client): void {
    client.middlewareStack.add(
      (next) => async (args) => {
        const name = budgetNameOf(args.input as { Bucket?: string; Key?: string });
        const onPrefix = (this.#byPrefix.get(name) ?? 0) + 1;
        this.#byPrefix.set(name, onPrefix);
        this.#now++;
        this.#peak = Math.max(this.#peak, this.#now);
        const bound = this.bound(name);
        if (onPrefix - bound > this.#peakOver) {
          this.#peakOver = onPrefix - bound;
          this.#peakOverAt = `${name} (bound ${bound})`;
        }
        try {
          return await next(args);
        } finally {
          this.#now--;
          const left = (this.#byPrefix.get(name) ?? 1) - 1;
          if (left === 0) this.#byPrefix.delete(name);
          else this.#byPrefix.set(name, left);
        }
      },
      { step: 'initialize', name: 'chaosInFlightGauge', priority: 'high' },
    );
  }

  /** Peaks since the last call, then starts new ones from the requests in flight now. */
  takePeaks(): { peakInFlight: number; peakOverBound: number; peakOverBoundAt: string } {
    const peaks = {
      peakInFlight: this.#peak,
      peakOverBound: this.#peakOver === Number.NEGATIVE_INFINITY ? 0 : this.#peakOver,
      peakOverBoundAt: this.#peakOverAt,
    };
    this.#peak = this.#now;
    this.#peakOver = Number.NEGATIVE_INFINITY;
    this.#peakOverAt = '';
    return peaks;
  }
}

/** The handler's budget name for the tenant prefix a request's key is under (`prefix:<bucket>/t=x/`). */
export function budgetNameOf(input: { Bucket?: string; Key?: string }): string {
  const key = input.Key ?? '';
  const slash = key.indexOf('/');
  return `prefix:${input.Bucket ?? ''}/${slash < 0 ? key : key.slice(0, slash + 1)}`;
}
