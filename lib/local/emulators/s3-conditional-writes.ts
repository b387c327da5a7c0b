import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { S3StoreView } from './fauxqs-stores.js';
import { KeyedMutex } from './keyed-mutex.js';
import { bucketAndKey, elementTexts, noSuchKey, type S3ErrorAnswer, sendS3Error } from './s3-xml.js';

/**
 * S3's conditional writes, enforced inside the embedded S3 (fauxqs accepts `If-None-Match` / `If-Match` and
 * ignores them; design.md, "S3 conditional writes"). Installed on the emulator's own HTTP app, so every
 * client of the embedded stack meets them, whichever endpoint or proxy it came through.
 *
 * The model, as S3 documents it:
 * - `PutObject`, `CopyObject` and `CompleteMultipartUpload` with `If-None-Match: *` answer `412
 *   PreconditionFailed` when the key holds an object; any other `If-None-Match` value is `501
 *   NotImplemented`.
 * - The same writes, and `DeleteObject`, with `If-Match: <etag>` answer `412` when the object's ETag differs
 *   and `404 NoSuchKey` when there is no object.
 * - Writes to one key are linearised: every object write (conditional or not, `DeleteObjects` included)
 *   holds its keys from the condition check until the emulator has applied it, so of N racing conditional
 *   writes exactly the ones whose condition held at their turn succeed. S3 may answer a racing loser
 *   `409 ConditionalRequestConflict` instead of `412`; a linearised emulator never needs to.
 * - Error bodies and headers are S3's (XML `Code`, `Message`, `RequestId`, `HostId`), so SDK v3 names the
 *   error `PreconditionFailed` / `NoSuchKey` with the same status as against AWS.
 * - The condition is checked against the emulator's own store, by the key as the emulator reads it from the
 *   URL (an HTTP round trip would normalise `.` and `..` segments, which S3 keeps as part of the key).
 * Not modelled: `x-amz-if-match-last-modified-time` / `-size`, and per-object ETags inside `DeleteObjects`.
 */
export function enforceConditionalWrites(app: FastifyInstance, store: S3StoreView): ConditionalWritesGate {
  const mutex = new KeyedMutex();
  const releases = new WeakMap<FastifyRequest, () => void>();
  const release = (request: FastifyRequest) => {
    releases.get(request)?.();
    releases.delete(request);
  };

  app.addHook('preHandler', async (request, reply) => {
    const write = objectWriteOf(request);
    if (write === undefined) return;
    const free = await mutex.lock(write.keys.map((key) => `${write.bucket}/${key}`));
    releases.set(request, free);
    // Backstop: whatever happens to the request from here, its keys are free once its socket answer ends.
    reply.raw.once('close', free);
    if (write.condition === undefined) return;
    const current = store.buckets.get(write.bucket)?.get(write.keys[0] ?? '')?.etag;
    const refusal = refusalOf(write.condition, current);
    if (refusal === undefined) return;
    release(request);
    return sendS3Error(reply, refusal(write.keys[0] ?? ''));
  });
  // The emulator applies a write synchronously in its route handler, before it sends the answer: the keys
  // can go as soon as the answer is on its way. Synchronous (callback) hook: see
  // docs/decisions/synchronous-on-send-hooks.md.
  app.addHook('onSend', (request, _reply, payload, done) => {
    release(request);
    done(null, payload);
  });

  return {
    get busyKeys() {
      return mutex.busyKeys;
    },
  };
}

/** What the gate holds (tests: 0 when the emulator is idle). */
export interface ConditionalWritesGate {
  readonly busyKeys: number;
}

interface Condition {
  ifNoneMatch?: string;
  ifMatch?: string;
}

interface ObjectWrite {
  bucket: string;
  keys: string[];
  condition?: Condition;
}

/** How S3 answers a write whose condition fails, for its key. */
type Refusal = (key: string) => S3ErrorAnswer;

const preconditionFailed =
  (header: string): Refusal =>
  () => ({
    status: 412,
    code: 'PreconditionFailed',
    message: 'At least one of the pre-conditions you specified did not hold',
    detail: `<Condition>${header}</Condition>`,
  });
const IF_NONE_MATCH_FAILED = preconditionFailed('If-None-Match');
const IF_MATCH_FAILED = preconditionFailed('If-Match');
const IF_NONE_MATCH_NOT_STAR: Refusal = () => ({
  status: 501,
  code: 'NotImplemented',
  message: 'A header you provided implies functionality that is not implemented',
  detail: '<Header>If-None-Match</Header>',
});

/** Query parameters of a PUT or DELETE on a key that touch a sub-resource, not the object's content. */
const SUBRESOURCES = ['tagging', 'acl', 'retention', 'legal-hold', 'uploadId', 'partNumber'];

/** The object write a request makes, with its keys and condition (`undefined`: reads, bucket calls, parts). */
export function objectWriteOf(request: {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}): ObjectWrite | undefined {
  const { bucket, key, query } = bucketAndKey(request.url);
  const method = request.method.toUpperCase();
  if (method === 'POST' && query.has('delete')) {
    const keys = deleteObjectsKeys(request.body);
    return keys.length === 0 ? undefined : { bucket, keys };
  }
  if (key === '') return undefined;
  const isObjectWrite =
    (method === 'PUT' && !SUBRESOURCES.some((name) => query.has(name))) ||
    (method === 'DELETE' && !query.has('uploadId') && !query.has('tagging')) ||
    (method === 'POST' && query.has('uploadId'));
  if (!isObjectWrite) return undefined;
  const ifNoneMatch = method === 'DELETE' ? undefined : header(request.headers, 'if-none-match');
  const ifMatch = header(request.headers, 'if-match');
  const condition =
    ifNoneMatch === undefined && ifMatch === undefined
      ? undefined
      : {
          ...(ifNoneMatch === undefined ? {} : { ifNoneMatch }),
          ...(ifMatch === undefined ? {} : { ifMatch }),
        };
  return { bucket, keys: [key], ...(condition === undefined ? {} : { condition }) };
}

/** Why S3 refuses a write with this condition on an object whose ETag is `current` (`undefined`: none). */
export function refusalOf(condition: Condition, current: string | undefined): Refusal | undefined {
  if (condition.ifNoneMatch !== undefined) {
    if (condition.ifNoneMatch.trim() !== '*') return IF_NONE_MATCH_NOT_STAR;
    if (current !== undefined) return IF_NONE_MATCH_FAILED;
  }
  if (condition.ifMatch === undefined) return undefined;
  if (current === undefined) return noSuchKey;
  const wanted = condition.ifMatch.split(',').map(bareEtag);
  return wanted.includes('*') || wanted.includes(bareEtag(current)) ? undefined : IF_MATCH_FAILED;
}

/** Strips a weak marker and quotes: `W/"abc"` and `"abc"` compare as `abc`. */
function bareEtag(value: string): string {
  return value.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The `<Key>`s of a `DeleteObjects` body (the emulator hands S3 routes their body as a Buffer). */
function deleteObjectsKeys(body: unknown): string[] {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : '';
  return elementTexts(text, 'Key');
}
