/**
 * Waits for `target` to drain, but no longer than `graceMs` after `signal` aborts (the cutoff, which aborts
 * every attempt in flight). An aborted request that never settles (a connection that ignores its abort) must
 * not hold the invocation past its deadline: the handler hung until Lambda killed it, failing the batch's
 * written records with it. Past the grace the permits go back with that request still out; it was aborted
 * and starts nothing more.
 */
export async function drainBy(
  target: { drain?(): Promise<void> },
  signal: AbortSignal,
  graceMs: number,
): Promise<void> {
  const drained = target.drain?.();
  if (drained === undefined) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const startGrace = (resolve: () => void) => {
    timer = setTimeout(resolve, graceMs);
  };
  let onAbort: (() => void) | undefined;
  const grace = new Promise<void>((resolve) => {
    if (signal.aborted) startGrace(resolve);
    else {
      onAbort = () => startGrace(resolve);
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    await Promise.race([drained, grace]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
}
