import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { S3StoreView, StoredS3Object } from './fauxqs-stores.js';
import {
  bucketAndKey,
  elementTexts,
  escapeXml,
  noSuchKey,
  type S3ErrorAnswer,
  sendS3Error,
  sendXml,
} from './s3-xml.js';

type TagSet = ReadonlyArray<readonly [string, string]>;

/** S3's limits on an object's tags. */
const MAX_TAGS = 10;
const MAX_TAG_KEY_LENGTH = 128;
const MAX_TAG_VALUE_LENGTH = 256;

/**
 * Object tags for the embedded S3, which fauxqs does not keep. Tags belong to the stored object itself (the
 * emulator stores a new object on every write, whatever the path: PUT, copy, multipart, form POST), so a new
 * object starts untagged unless its write gave tags, as on S3:
 * - a PUT's `x-amz-tagging`; a copy's source tags (`x-amz-tagging-directive: COPY`, the default) or its own
 *   `x-amz-tagging` (`REPLACE`); a multipart upload's `x-amz-tagging` given at `CreateMultipartUpload`;
 * - `GetObjectTagging`, `PutObjectTagging` and `DeleteObjectTagging` read and change them, and GET/HEAD of a
 *   tagged object carry `x-amz-tagging-count`;
 * - more than 10 tags is `400 BadRequest`; a repeated, empty or too long key or a too long value is `400
 *   InvalidTag` (`InvalidArgument` for a repeated key in the `x-amz-tagging` header).
 * Lifecycle rules that filter on tags are not run locally.
 */
export function keepS3ObjectTags(app: FastifyInstance, store: S3StoreView): void {
  const tags = new WeakMap<StoredS3Object, TagSet>();
  /** Tags given at `CreateMultipartUpload`, by upload id, until the upload completes or is aborted. */
  const uploadTags = new Map<string, TagSet>();
  /** A copy's tags, read from its source before the copy is applied (the source may be the destination). */
  const copyTags = new WeakMap<FastifyRequest, TagSet>();
  const objectAt = (bucket: string, key: string) => store.buckets.get(bucket)?.get(key);
  const tag = (object: StoredS3Object | undefined, set: TagSet | undefined) => {
    if (object === undefined) return;
    if (set !== undefined && set.length > 0) tags.set(object, set);
    else tags.delete(object);
  };

  app.addHook('preHandler', async (request, reply) => {
    const { bucket, key, query } = bucketAndKey(request.url);
    if (key === '') return;
    if (query.has('tagging')) {
      const object = objectAt(bucket, key);
      if (object === undefined) return sendS3Error(reply, noSuchKey(key));
      switch (request.method) {
        case 'GET': {
          const set = (tags.get(object) ?? [])
            .map(([k, v]) => `<Tag><Key>${escapeXml(k)}</Key><Value>${escapeXml(v)}</Value></Tag>`)
            .join('');
          return sendXml(
            reply,
            `<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>${set}</TagSet></Tagging>`,
          );
        }
        case 'PUT': {
          const xml = Buffer.isBuffer(request.body)
            ? request.body.toString('utf8')
            : String(request.body ?? '');
          const values = elementTexts(xml, 'Value');
          const set = elementTexts(xml, 'Key').map((k, i) => [k, values[i] ?? ''] as const);
          const refusal = refusalOf(set, 'InvalidTag');
          if (refusal !== undefined) return sendS3Error(reply, refusal);
          tag(object, set);
          return reply.code(200).send();
        }
        case 'DELETE':
          tag(object, undefined);
          return reply.code(204).send();
        default:
          return;
      }
    }
    const creates = request.method === 'PUT' || (request.method === 'POST' && query.has('uploads'));
    if (!creates || query.has('uploadId')) return;
    const copySource = header(request, 'x-amz-copy-source');
    if (copySource !== undefined && header(request, 'x-amz-tagging-directive') !== 'REPLACE') {
      const source = bucketAndKey(copySource);
      const object = objectAt(source.bucket, source.key);
      copyTags.set(request, (object && tags.get(object)) ?? []);
      return;
    }
    const refusal = refusalOf(headerTags(request), 'InvalidArgument');
    if (refusal !== undefined) return sendS3Error(reply, refusal);
  });

  // After the emulator applied a write: the new object's tags are the ones it was written with. Synchronous
  // (callback) hook: see docs/decisions/synchronous-on-send-hooks.md.
  app.addHook('onSend', (request, reply, payload, done) => {
    afterAnswer(request, reply, payload);
    done(null, payload);
  });
  const afterAnswer = (request: FastifyRequest, reply: FastifyReply, payload: unknown): void => {
    const { bucket, key, query } = bucketAndKey(request.url);
    const ok = reply.statusCode >= 200 && reply.statusCode < 300;
    if (key === '' || !ok || query.has('tagging') || query.has('partNumber')) return;
    const uploadId = query.get('uploadId');
    switch (request.method) {
      case 'PUT':
        if (uploadId === null) tag(objectAt(bucket, key), copyTags.get(request) ?? headerTags(request));
        break;
      case 'POST':
        if (query.has('uploads') && typeof payload === 'string') {
          const created = elementTexts(payload, 'UploadId')[0];
          const set = headerTags(request);
          if (created !== undefined && set.length > 0) uploadTags.set(created, set);
        } else if (uploadId !== null && uploadTags.has(uploadId)) {
          // The completed object is new, hence untagged, unless its upload was created with tags.
          tag(objectAt(bucket, key), uploadTags.get(uploadId));
          uploadTags.delete(uploadId);
        }
        break;
      case 'DELETE':
        if (uploadId !== null) uploadTags.delete(uploadId);
        break;
      case 'GET':
      case 'HEAD': {
        const object = objectAt(bucket, key);
        const count = (object && tags.get(object)?.length) ?? 0;
        if (count > 0) reply.header('x-amz-tagging-count', String(count));
        break;
      }
    }
  };
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The tags of an `x-amz-tagging` header (URL-encoded query parameters). */
function headerTags(request: FastifyRequest): TagSet {
  const value = header(request, 'x-amz-tagging');
  return value === undefined ? [] : [...new URLSearchParams(value)];
}

/** Why S3 refuses this tag set (`undefined`: it does not); `repeated` is the code for a repeated key. */
export function refusalOf(
  set: TagSet,
  repeated: 'InvalidTag' | 'InvalidArgument',
): S3ErrorAnswer | undefined {
  const invalidTag = (message: string): S3ErrorAnswer => ({ status: 400, code: 'InvalidTag', message });
  if (set.length > MAX_TAGS)
    return { status: 400, code: 'BadRequest', message: `Object tags cannot be greater than ${MAX_TAGS}` };
  if (new Set(set.map(([k]) => k)).size < set.length) {
    return repeated === 'InvalidTag'
      ? invalidTag('Cannot provide multiple Tags with the same key')
      : {
          status: 400,
          code: 'InvalidArgument',
          message:
            "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.",
        };
  }
  for (const [k, v] of set) {
    if (k === '') return invalidTag('The TagKey you have provided is invalid');
    if ([...k].length > MAX_TAG_KEY_LENGTH)
      return invalidTag(`The TagKey you have provided is too long, max ${MAX_TAG_KEY_LENGTH}`);
    if ([...v].length > MAX_TAG_VALUE_LENGTH)
      return invalidTag(`The TagValue you have provided is too long, max ${MAX_TAG_VALUE_LENGTH}`);
  }
  return undefined;
}
