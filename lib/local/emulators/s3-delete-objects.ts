import type { FastifyInstance } from 'fastify';
import type { S3StoreView } from './fauxqs-stores.js';
import { bucketAndKey, elementTexts, escapeXml, noSuchBucket, sendS3Error, sendXml } from './s3-xml.js';

/**
 * Answers `DeleteObjects` (`POST /<bucket>?delete`) from the emulator's store, deleting exactly the keys
 * the XML body names. fauxqs decodes only the five named XML entities, one after the other, so a key
 * holding a newline or a carriage return (which SDK v3 sends as `&#x0A;` / `&#x0D;`) or text such as
 * `&lt;` was reported deleted while it stayed. As on S3: every named key is reported `Deleted` whether it
 * existed or not, none with `<Quiet>true</Quiet>`. Installed after the conditional-writes gate, which holds
 * the keys while they are deleted. Not modelled: versions, per-object ETag conditions, the 1,000-key cap.
 */
export function serveDeleteObjects(app: FastifyInstance, store: S3StoreView): void {
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const { bucket, key, query } = bucketAndKey(request.url);
    if (key !== '' || !query.has('delete')) return;
    if (!store.buckets.has(bucket)) return sendS3Error(reply, noSuchBucket(bucket));
    const xml = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : String(request.body ?? '');
    const keys = elementTexts(xml, 'Key');
    for (const deleted of keys) store.deleteObject(bucket, deleted);
    const quiet = elementTexts(xml, 'Quiet')[0]?.trim().toLowerCase() === 'true';
    const deleted = quiet ? '' : keys.map((k) => `<Deleted><Key>${xmlText(k)}</Key></Deleted>`).join('');
    return sendXml(
      reply,
      `<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${deleted}</DeleteResult>`,
    );
  });
}

/** XML text that survives a parser's line-end normalisation (`\r` would read back as `\n`). */
function xmlText(text: string): string {
  return escapeXml(text).replace(/[\r\n]/g, (char) => `&#${char.charCodeAt(0)};`);
}
