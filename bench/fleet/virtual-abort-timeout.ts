// `AbortSignal.timeout` runs on Node's own timers, not on `globalThis.setTimeout`, so the virtual clock
// (bench/throttle/virtual-time.ts) does not see it: in a simulation it fires after *real* milliseconds.
// A cell process descheduled for a second on a busy machine would then abort a budget report that takes
// a few simulated ms, and two runs of one seeded cell would differ (in rateReportFailures).
// Installed after the virtual clock, this puts the timeout on the clock the rest of the simulation uses.

/** Replaces `AbortSignal.timeout` with one on `globalThis.setTimeout` (the virtual clock once installed). */
export function installVirtualAbortTimeout(): void {
  AbortSignal.timeout = (ms: number): AbortSignal => {
    const controller = new AbortController();
    setTimeout(() => {
      // What Node's own AbortSignal.timeout aborts with (lib/errors/classify.ts counts it as a timeout).
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, ms);
    return controller.signal;
  };
}
