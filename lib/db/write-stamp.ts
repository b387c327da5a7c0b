/**
 * The order of a write to one record: its `seq` (higher = newer), ties broken by `tie` (the SQS message
 * id), compared as strings. Two deliveries of one message carry the same stamp, which is how a duplicate
 * is recognised as already applied.
 */
export interface WriteStamp {
  /** A non-negative safe integer; -1 only for records written without sequencing (older than any write). */
  readonly seq: number;
  readonly tie: string;
}

/** Older than every sequenced write: the stamp of a record written by the plain (unsequenced) API. */
export const UNSEQUENCED: WriteStamp = { seq: -1, tie: '' };

/** < 0 when `a` is older than `b`, 0 when equal, > 0 when newer. */
export function compareStamps(a: WriteStamp, b: WriteStamp): number {
  if (a.seq !== b.seq) return a.seq < b.seq ? -1 : 1;
  return a.tie === b.tie ? 0 : a.tie < b.tie ? -1 : 1;
}

/** The stored form: `[seq, tie]`, the shortest JSON that keeps both. */
export type StampJson = readonly [number, string];

export function stampToJson(stamp: WriteStamp): StampJson {
  return [stamp.seq, stamp.tie];
}

export function stampFromJson(value: unknown): WriteStamp | undefined {
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [seq, tie] = value as unknown[];
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < -1 || typeof tie !== 'string')
    return undefined;
  return { seq, tie };
}
