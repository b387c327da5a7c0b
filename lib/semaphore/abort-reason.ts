/**
 * Settles as `work` does, except that a rejection once `bound` has aborted becomes `bound.reason`: the SDK
 * reports an aborted request as its own `AbortError`, and the caller needs to know why it was aborted (its
 * cutoff, or the give-back timeout).
 */
export async function withAbortReason<T>(bound: AbortSignal, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (bound.aborted) throw bound.reason;
    throw err;
  }
}
