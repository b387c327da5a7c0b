import type { FastifyInstance, FastifyRequest } from 'fastify';

/** SQS's message system attribute on a message its redrive policy moved: the ARN of the queue it left. */
export const DEAD_LETTER_SOURCE_ATTRIBUTE = 'DeadLetterQueueSourceArn';

interface Received {
  MessageId?: string;
  ReceiptHandle?: string;
  Attributes?: Record<string, string>;
}

/** The queue a request names, by its URL's path (`/<account>/<name>`: the emulator ignores the host). */
function queuePathOf(body: unknown): string | undefined {
  const url = (body as { QueueUrl?: unknown } | undefined)?.QueueUrl;
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).pathname;
  } catch {
    return undefined;
  }
}

function asksForSource(body: unknown): boolean {
  const { MessageSystemAttributeNames = [], AttributeNames = [] } = (body ?? {}) as {
    MessageSystemAttributeNames?: unknown[];
    AttributeNames?: unknown[];
  };
  const names = [...MessageSystemAttributeNames, ...AttributeNames];
  return names.includes('All') || names.includes(DEAD_LETTER_SOURCE_ATTRIBUTE);
}

function receiptHandlesOf(action: string, body: unknown): string[] {
  const input = (body ?? {}) as { ReceiptHandle?: unknown; Entries?: { ReceiptHandle?: unknown }[] };
  const handles =
    action === 'DeleteMessage' ? [input.ReceiptHandle] : (input.Entries ?? []).map((e) => e.ReceiptHandle);
  return handles.filter((h): h is string => typeof h === 'string');
}

/**
 * Makes the embedded SQS (fauxqs, which moves a message to its queue's dead-letter queue but records no
 * source) answer `DeadLetterQueueSourceArn` as SQS does: on a message its redrive policy moved, when the
 * receive asks for it (by name or `All`). Observes the emulator's HTTP answers only: the queue each message
 * id was sent to (`SendMessage`, `SendMessageBatch`), forgotten once the message is deleted; a message
 * received from another queue than the one it was sent to was moved there, from the queue it was sent to.
 */
export function stampDeadLetterSources(app: FastifyInstance): void {
  const sentTo = new Map<string, string>();
  const handlesOf = new Map<string, Set<string>>();
  const messageOf = new Map<string, string>();
  const arnOf = new Map<string, string>();

  const queueArn = async (request: FastifyRequest, path: string): Promise<string | undefined> => {
    const known = arnOf.get(path);
    if (known !== undefined) return known;
    const answer = await app.inject({
      method: 'POST',
      url: '/',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.GetQueueAttributes',
        host: request.headers.host ?? '127.0.0.1',
      },
      payload: JSON.stringify({ QueueUrl: `http://127.0.0.1${path}`, AttributeNames: ['QueueArn'] }),
    });
    const arn = (answer.json() as { Attributes?: { QueueArn?: string } }).Attributes?.QueueArn;
    if (arn !== undefined) arnOf.set(path, arn);
    return arn;
  };

  const forget = (handle: string) => {
    const id = messageOf.get(handle);
    if (id === undefined) return;
    for (const h of handlesOf.get(id) ?? []) messageOf.delete(h);
    handlesOf.delete(id);
    sentTo.delete(id);
  };

  // Synchronous (callback) hook, async only to look up a source queue's ARN: see
  // docs/decisions/synchronous-on-send-hooks.md.
  app.addHook('onSend', (request, reply, payload, done) => {
    const target = request.headers['x-amz-target'];
    const path = queuePathOf(request.body);
    if (typeof target !== 'string' || !target.startsWith('AmazonSQS.') || path === undefined) {
      done(null, payload);
      return;
    }
    if (reply.statusCode !== 200 || typeof payload !== 'string') {
      done(null, payload);
      return;
    }
    const action = target.slice('AmazonSQS.'.length);
    if (action === 'SendMessage' || action === 'SendMessageBatch') {
      const answer = JSON.parse(payload) as { MessageId?: string; Successful?: { MessageId?: string }[] };
      const ids =
        action === 'SendMessage' ? [answer.MessageId] : (answer.Successful ?? []).map((s) => s.MessageId);
      for (const id of ids) if (id !== undefined) sentTo.set(id, path);
    } else if (action === 'DeleteMessage' || action === 'DeleteMessageBatch') {
      for (const handle of receiptHandlesOf(action, request.body)) forget(handle);
    } else if (action === 'ReceiveMessage') {
      const answer = JSON.parse(payload) as { Messages?: Received[] };
      const stamp = asksForSource(request.body);
      const moved: Array<{ message: Received; source: string }> = [];
      for (const m of answer.Messages ?? []) {
        if (m.MessageId === undefined || m.ReceiptHandle === undefined) continue;
        messageOf.set(m.ReceiptHandle, m.MessageId);
        handlesOf.set(m.MessageId, (handlesOf.get(m.MessageId) ?? new Set()).add(m.ReceiptHandle));
        const source = sentTo.get(m.MessageId);
        if (stamp && source !== undefined && source !== path) moved.push({ message: m, source });
      }
      if (moved.length > 0) {
        stampMoved(request, moved).then(
          (stamped) => done(null, stamped ? JSON.stringify(answer) : payload),
          (error: Error) => done(error),
        );
        return;
      }
    }
    done(null, payload);
  });

  /** Stamps each moved message with its source queue's ARN; true if any was stamped. */
  const stampMoved = async (
    request: FastifyRequest,
    moved: Array<{ message: Received; source: string }>,
  ): Promise<boolean> => {
    let stamped = false;
    for (const { message, source } of moved) {
      const arn = await queueArn(request, source);
      if (arn === undefined) continue;
      message.Attributes = { ...message.Attributes, [DEAD_LETTER_SOURCE_ATTRIBUTE]: arn };
      stamped = true;
    }
    return stamped;
  };
}
