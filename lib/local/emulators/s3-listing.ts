import type { FastifyInstance, FastifyReply } from 'fastify';
import type { S3StoreView, StoredS3Object } from './fauxqs-stores.js';
import { bucketAndKey, escapeXml, noSuchBucket, type S3ErrorAnswer, sendS3Error, sendXml } from './s3-xml.js';

/** The query parameters of a listing; any other one makes a bucket GET something else (location, ...). */
const LISTING_PARAMETERS = new Set([
  'list-type',
  'prefix',
  'delimiter',
  'max-keys',
  'marker',
  'start-after',
  'continuation-token',
  'encoding-type',
  'fetch-owner',
  'x-id',
]);

/** S3's page size cap. */
const MAX_KEYS = 1000;

/** What every continuation token this listing issues starts with, so a token it did not issue is refused. */
const TOKEN_MARK = 'k:';

/** The continuation token that resumes a listing after `key` (opaque to clients, as S3's are). */
export function continuationTokenAfter(key: string): string {
  return Buffer.from(TOKEN_MARK + key, 'utf8').toString('base64url');
}

/** The key a continuation token resumes after; `undefined` for a token this listing did not issue. */
export function keyOfContinuationToken(token: string): string | undefined {
  const text = Buffer.from(token, 'base64url').toString('utf8');
  if (!text.startsWith(TOKEN_MARK) || continuationTokenAfter(text.slice(TOKEN_MARK.length)) !== token)
    return undefined;
  return text.slice(TOKEN_MARK.length);
}

const invalidArgument = (message: string, name: string, value: string): S3ErrorAnswer => ({
  status: 400,
  code: 'InvalidArgument',
  message,
  detail: `<ArgumentName>${escapeXml(name)}</ArgumentName><ArgumentValue>${escapeXml(value)}</ArgumentValue>`,
});

/**
 * Compares two keys in UTF-8 byte order, S3's listing order (code point order, which UTF-16 code unit
 * order is not for characters above U+FFFF).
 */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Surrogates (U+D800-DFFF) rank above U+E000-FFFF: they encode code points above U+FFFF. */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** One page of a listing, in S3's terms. */
export interface ListingPage {
  objects: StoredS3Object[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** The last key or common prefix of the page: where the next page starts after. */
  last?: string;
}

/**
 * A page of the keys under `prefix` after `after`, in byte order, with keys sharing the next `delimiter`
 * rolled up into one common prefix; keys and common prefixes count alike toward `maxKeys`.
 */
export function listPage(
  objects: ReadonlyMap<string, StoredS3Object>,
  options: { prefix: string; delimiter?: string; after?: string; maxKeys: number },
): ListingPage {
  const { prefix, delimiter, after, maxKeys } = options;
  const keys = [...objects.keys()].filter((key) => key.startsWith(prefix)).sort(compareKeys);
  const page: ListingPage = { objects: [], commonPrefixes: [], isTruncated: false };
  let count = 0;
  for (const key of keys) {
    if (after !== undefined && compareKeys(key, after) <= 0) continue;
    const rest = key.slice(prefix.length);
    const at = delimiter ? rest.indexOf(delimiter) : -1;
    const entry = at === -1 ? key : prefix + rest.slice(0, at + (delimiter?.length ?? 0));
    // Keys of a common prefix already listed (on this page, or the one the marker ended on) are done.
    if (entry !== key && (entry === page.last || (after !== undefined && compareKeys(entry, after) <= 0)))
      continue;
    if (count >= maxKeys) {
      // S3 answers max-keys 0 with an empty page that is not truncated: there is no position to resume from.
      page.isTruncated = maxKeys > 0;
      break;
    }
    if (entry === key) page.objects.push(objects.get(key) as StoredS3Object);
    else page.commonPrefixes.push(entry);
    page.last = entry;
    count++;
  }
  return page;
}

/**
 * Answers ListObjectsV2 and ListObjects (v1) from the emulator's own objects, in S3's byte order with
 * continuation tokens and markers that resume exactly where a page ended (fauxqs sorts with `localeCompare`
 * and resumes by code unit, which skips or repeats keys that differ in case or punctuation). As S3 does, it
 * refuses with `400 InvalidArgument` a `max-keys` that is not an integer in [0, 2^31-1], an
 * `encoding-type` other than `url`, and a continuation token it did not issue; with `encoding-type=url`,
 * keys and prefixes are percent-encoded except for `/`.
 */
export function serveS3Listing(app: FastifyInstance, store: S3StoreView): void {
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'GET') return;
    const { bucket, key, query } = bucketAndKey(request.url);
    if (bucket === '' || key !== '') return;
    if ([...query.keys()].some((name) => !LISTING_PARAMETERS.has(name))) return;
    const objects = store.buckets.get(bucket);
    if (objects === undefined) return sendS3Error(reply, noSuchBucket(bucket));
    return answerListing(reply, bucket, objects, query);
  });
}

function answerListing(
  reply: FastifyReply,
  bucket: string,
  objects: ReadonlyMap<string, StoredS3Object>,
  query: URLSearchParams,
): FastifyReply {
  const v2 = query.get('list-type') === '2';
  const prefix = query.get('prefix') ?? '';
  const delimiter = query.get('delimiter') || undefined;
  const requested = query.get('max-keys') ?? `${MAX_KEYS}`;
  if (!/^\d{1,10}$/.test(requested) || Number(requested) > 2 ** 31 - 1) {
    const message = 'Argument maxKeys must be an integer between 0 and 2147483647';
    return sendS3Error(reply, invalidArgument(message, 'maxKeys', requested));
  }
  const maxKeys = Math.min(Number(requested), MAX_KEYS);
  const encoding = query.get('encoding-type') ?? undefined;
  if (encoding !== undefined && encoding !== 'url') {
    const message = 'Invalid Encoding Method specified in Request';
    return sendS3Error(reply, invalidArgument(message, 'encoding-type', encoding));
  }
  const token = query.get('continuation-token') ?? undefined;
  const tokenKey = token === undefined ? undefined : keyOfContinuationToken(token);
  if (v2 && token !== undefined && tokenKey === undefined) {
    const message = 'The continuation token provided is incorrect';
    return sendS3Error(reply, invalidArgument(message, 'continuation-token', token));
  }
  const startAfter = query.get('start-after') ?? undefined;
  const marker = query.get('marker') ?? undefined;
  const after = v2 ? (tokenKey ?? startAfter) : marker;
  const page = listPage(objects, {
    prefix,
    maxKeys,
    ...(delimiter ? { delimiter } : {}),
    ...(after ? { after } : {}),
  });

  const urlEncoded = encoding === 'url';
  const text = (value: string) =>
    escapeXml(urlEncoded ? encodeURIComponent(value).replaceAll('%2F', '/') : value);
  const element = (name: string, value: string | number | boolean) =>
    `<${name}>${typeof value === 'string' ? text(value) : value}</${name}>`;
  const parts = [element('Name', bucket), element('Prefix', prefix)];
  if (v2) {
    parts.push(element('KeyCount', page.objects.length + page.commonPrefixes.length));
    if (token !== undefined) parts.push(`<ContinuationToken>${escapeXml(token)}</ContinuationToken>`);
    if (startAfter !== undefined) parts.push(element('StartAfter', startAfter));
  } else {
    parts.push(element('Marker', marker ?? ''));
  }
  parts.push(element('MaxKeys', maxKeys));
  if (delimiter) parts.push(element('Delimiter', delimiter));
  if (urlEncoded) parts.push('<EncodingType>url</EncodingType>');
  parts.push(element('IsTruncated', page.isTruncated));
  if (page.isTruncated && page.last !== undefined) {
    if (v2) {
      parts.push(`<NextContinuationToken>${continuationTokenAfter(page.last)}</NextContinuationToken>`);
    } else if (delimiter) {
      parts.push(element('NextMarker', page.last));
    }
  }
  for (const object of page.objects) {
    parts.push(
      `<Contents>${element('Key', object.key)}${element('LastModified', object.lastModified.toISOString())}<ETag>${escapeXml(object.etag)}</ETag>${element('Size', object.contentLength)}<StorageClass>STANDARD</StorageClass></Contents>`,
    );
  }
  for (const common of page.commonPrefixes)
    parts.push(`<CommonPrefixes>${element('Prefix', common)}</CommonPrefixes>`);
  return sendXml(
    reply,
    `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${parts.join('')}</ListBucketResult>`,
  );
}
