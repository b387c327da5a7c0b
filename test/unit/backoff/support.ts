import type { Backoff } from '../../../lib/backoff/index.js';

/** The first `n` durations of a chain, starting at `first`. */
export function durations(first: Backoff, n: number): number[] {
  const out = [first.duration];
  let step = first;
  while (out.length < n) {
    step = step.next();
    out.push(step.duration);
  }
  return out;
}

/** A random source that plays back `draws` in order and fails the test if a strategy draws once too often. */
export function playback(...draws: number[]): () => number {
  return () => {
    const draw = draws.shift();
    if (draw === undefined) throw new Error('ran out of draws');
    return draw;
  };
}
