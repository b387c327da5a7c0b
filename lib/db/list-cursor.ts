import { InvalidCursorError } from './errors.js';

// The cursor of a sharded resource's `list`: where the k-way merge stopped. The merge hands out keys in one
// order shared by every shard (the key's text after its shard prefix, `id=<id>.json`), so one position,
// the last key handed out, is each shard's position: a shard resumes at its first key past it (ListObjectsV2
// `StartAfter`). Records inserted behind that position are not listed, ones inserted ahead of it are, as
// with an unsharded listing. The token is base64url JSON `{ v, n, a }` (version, shard count, position),
// opaque to callers and checked on the way back.

const CURSOR_VERSION = 1;
/** S3 keys are at most 1,024 bytes, so no position is longer. */
const MAX_POSITION_LENGTH = 1024;
/** base64url of the JSON of the longest position, with room for the other fields. */
const MAX_CURSOR_LENGTH = 2048;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The cursor that resumes a listing of `shards` shards after the key whose text past its shard prefix is `position`. */
export function encodeShardCursor(shards: number, position: string): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, n: shards, a: position }), 'utf8').toString(
    'base64url',
  );
}

/**
 * The position in `cursor`, a cursor this resource's `list` handed out; `InvalidCursorError` for anything
 * else, including a cursor of a listing over another shard count.
 */
export function decodeShardCursor(resource: string, shards: number, cursor: unknown): string {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH)
    throw new InvalidCursorError(resource, 'must be a non-empty string from a previous page');
  if (!BASE64URL.test(cursor)) throw new InvalidCursorError(resource, 'is not base64url');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError(resource, 'does not decode to JSON');
  }
  if (typeof value !== 'object' || value === null || (value as { v?: unknown }).v !== CURSOR_VERSION)
    throw new InvalidCursorError(resource, `is not a version ${CURSOR_VERSION} cursor`);
  const { n, a } = value as { n?: unknown; a?: unknown };
  if (n !== shards) throw new InvalidCursorError(resource, `was made for ${String(n)} shards, not ${shards}`);
  if (typeof a !== 'string' || a.length === 0 || a.length > MAX_POSITION_LENGTH)
    throw new InvalidCursorError(resource, 'holds no valid position');
  return a;
}

/**
 * Throws `InvalidCursorError` when `cursor`, given to an unsharded resource, is a sharded listing's cursor
 * (one this resource handed out under another shard count). S3 continuation tokens are opaque and never
 * decode to one; anything else goes to S3 as it is.
 */
export function refuseShardCursor(resource: string, cursor: string): void {
  if (cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) return;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return;
  }
  if (typeof value === 'object' && value !== null && (value as { v?: unknown }).v === CURSOR_VERSION)
    throw new InvalidCursorError(
      resource,
      `was made for ${String((value as { n?: unknown }).n)} shards, not 1`,
    );
}
