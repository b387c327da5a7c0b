import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';

// What the embedded S3's own answers share: S3's XML error body and escaping.

const ESCAPES: Record<string, string> = {
  '<': '&lt;',
  '>': '&gt;',
  '&': '&amp;',
  '"': '&quot;',
  "'": '&apos;',
};
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (char) => ESCAPES[char] ?? char);
}

export function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
    return ENTITIES[entity] ?? '';
  });
}

/** The text of every `<name>...</name>` element of an XML document, in order. */
export function elementTexts(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, 'g'))].map((m) =>
    unescapeXml(m[1] ?? ''),
  );
}

/** An S3 error: status, `Code`, `Message` and any extra elements S3 adds for that code. */
export interface S3ErrorAnswer {
  status: number;
  code: string;
  message: string;
  /** Extra elements, already XML (e.g. `<Key>...</Key>`). */
  detail?: string;
}

/** Answers as S3 does when it refuses a request: XML body, request ids in body and headers. */
export function sendS3Error(reply: FastifyReply, error: S3ErrorAnswer): FastifyReply {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const hostId = randomBytes(24).toString('base64');
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${error.code}</Code><Message>${escapeXml(error.message)}</Message>${error.detail ?? ''}<RequestId>${requestId}</RequestId><HostId>${hostId}</HostId></Error>`;
  return reply
    .code(error.status)
    .header('content-type', 'application/xml')
    .header('x-amz-request-id', requestId)
    .header('x-amz-id-2', hostId)
    .send(body);
}

export function noSuchKey(key: string): S3ErrorAnswer {
  return {
    status: 404,
    code: 'NoSuchKey',
    message: 'The specified key does not exist.',
    detail: `<Key>${escapeXml(key)}</Key>`,
  };
}

export function noSuchBucket(bucket: string): S3ErrorAnswer {
  return {
    status: 404,
    code: 'NoSuchBucket',
    message: 'The specified bucket does not exist',
    detail: `<BucketName>${escapeXml(bucket)}</BucketName>`,
  };
}

/** Sends an XML document with S3's content type. */
export function sendXml(reply: FastifyReply, xml: string): FastifyReply {
  return reply
    .code(200)
    .header('content-type', 'application/xml')
    .send(`<?xml version="1.0" encoding="UTF-8"?>\n${xml}`);
}

/** The bucket and the key (URL-decoded; '' for a bucket-level request) of a path-style request URL. */
export function bucketAndKey(url: string): { bucket: string; key: string; query: URLSearchParams } {
  const [rawPath = '/', rawQuery = ''] = url.split('?', 2);
  const path = rawPath.replace(/^\/+/, '');
  const slash = path.indexOf('/');
  return {
    bucket: decode(slash === -1 ? path : path.slice(0, slash)),
    key: slash === -1 ? '' : decode(path.slice(slash + 1)),
    query: new URLSearchParams(rawQuery),
  };
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
