import type { Deferral, DeferralPort } from './deferral-port.js';

/** Decides whether the in-process port takes a deferral (default: every one). */
export type DeferralFilter = (deferral: Deferral) => boolean;

/**
 * A deferral port in process memory: every deferral it takes is kept in `deferred`, keyed by the record's
 * message id. `accept` refuses chosen ones (the handler must then redeliver those records), as a full or
 * unreachable queue, or a FIFO source, would.
 */
export class MemoryDeferrals implements DeferralPort {
  readonly deferred = new Map<string, Deferral>();
  /** Every `defer` call, with the deferrals it carried. */
  readonly calls: (readonly Deferral[])[] = [];
  accept: DeferralFilter = () => true;

  async defer(deferrals: readonly Deferral[]): Promise<ReadonlySet<string>> {
    this.calls.push(deferrals);
    const refused = new Set<string>();
    for (const deferral of deferrals) {
      if (this.accept(deferral)) this.deferred.set(deferral.record.messageId, deferral);
      else refused.add(deferral.record.messageId);
    }
    return refused;
  }
}
