import type { FastifyInstance } from 'fastify';
import type { S3StoreView } from './fauxqs-stores.js';
import { bucketAndKey, elementTexts, escapeXml, noSuchKey, sendS3Error, sendXml } from './s3-xml.js';

type TagSet = ReadonlyArray<readonly [string, string]>;

/**
 * Object tags for the embedded S3, which fauxqs does not keep: a PUT's `x-amz-tagging` becomes the new
 * object's tag set (a PUT without it leaves the object untagged, as on S3), `GetObjectTagging`,
 * `PutObjectTagging` and `DeleteObjectTagging` read and change it, and GET/HEAD of a tagged object carry
 * `x-amz-tagging-count`. Lifecycle rules that filter on tags are not run locally.
 */
export function keepS3ObjectTags(app: FastifyInstance, store: S3StoreView): void {
  const tags = new Map<string, TagSet>();
  const id = (bucket: string, key: string) => `${bucket}/${key}`;
  const exists = (bucket: string, key: string) => store.buckets.get(bucket)?.has(key) ?? false;

  app.addHook('preHandler', async (request, reply) => {
    const { bucket, key, query } = bucketAndKey(request.url);
    if (key === '' || !query.has('tagging')) return;
    if (!exists(bucket, key)) return sendS3Error(reply, noSuchKey(key));
    switch (request.method) {
      case 'GET': {
        const set = (tags.get(id(bucket, key)) ?? [])
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
        const keys = elementTexts(xml, 'Key');
        const values = elementTexts(xml, 'Value');
        tags.set(
          id(bucket, key),
          keys.map((k, i) => [k, values[i] ?? ''] as const),
        );
        return reply.code(200).send();
      }
      case 'DELETE':
        tags.delete(id(bucket, key));
        return reply.code(204).send();
      default:
        return;
    }
  });

  // After the emulator applied a write: the object's tags are the ones it was written with.
  app.addHook('onSend', (request, reply, payload, done) => {
    const { bucket, key, query } = bucketAndKey(request.url);
    if (key !== '' && !query.has('tagging') && !query.has('uploadId') && !query.has('partNumber')) {
      const ok = reply.statusCode >= 200 && reply.statusCode < 300;
      if (request.method === 'PUT' && ok) {
        const header = request.headers['x-amz-tagging'];
        const set = typeof header === 'string' ? [...new URLSearchParams(header)] : [];
        if (set.length > 0) tags.set(id(bucket, key), set);
        else tags.delete(id(bucket, key));
      } else if (request.method === 'DELETE' && ok) {
        tags.delete(id(bucket, key));
      } else if ((request.method === 'GET' || request.method === 'HEAD') && ok) {
        const count = tags.get(id(bucket, key))?.length ?? 0;
        if (count > 0) reply.header('x-amz-tagging-count', String(count));
      }
    }
    done(null, payload);
  });
}
