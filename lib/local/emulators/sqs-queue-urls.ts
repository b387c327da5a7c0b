import type { FastifyInstance } from 'fastify';

/** SQS actions whose answers carry queue URLs. */
const ACTIONS_WITH_QUEUE_URLS = new Set([
  'AmazonSQS.CreateQueue',
  'AmazonSQS.GetQueueUrl',
  'AmazonSQS.ListQueues',
  'AmazonSQS.ListDeadLetterSourceQueues',
]);

/** The host fauxqs puts in queue URLs (`sqs.<region>.localhost:<port>`), which most resolvers do not know. */
const UNRESOLVABLE_QUEUE_HOST = /http:\/\/sqs\.[a-z0-9-]+\.localhost:(\d+)\//g;

/**
 * Makes the embedded SQS hand out queue URLs on the address it listens on (`http://127.0.0.1:<port>/...`).
 * SDK v3's SQS client sends each call to its queue URL's host (`useQueueUrlAsEndpoint`), so a plain
 * `new SQSClient({})` configured only by `AWS_ENDPOINT_URL_SQS` works with the URLs the stack prints. The
 * emulator finds a queue by its URL's path, whatever the host, so old and new URLs name the same queue.
 * Only the answers that carry queue URLs are rewritten, never message bodies.
 */
export function serveResolvableQueueUrls(app: FastifyInstance): void {
  // Synchronous (callback) hook: see docs/decisions/synchronous-on-send-hooks.md.
  app.addHook('onSend', (request, _reply, payload, done) => {
    const target = request.headers['x-amz-target'];
    if (typeof target !== 'string' || !ACTIONS_WITH_QUEUE_URLS.has(target) || typeof payload !== 'string') {
      done(null, payload);
      return;
    }
    done(null, payload.replace(UNRESOLVABLE_QUEUE_HOST, 'http://127.0.0.1:$1/'));
  });
}
