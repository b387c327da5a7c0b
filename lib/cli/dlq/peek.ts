import { parseArgs } from 'node:util';
import { sqsClientFromEnv } from '../clients.js';
import { type CliIo, EXIT } from '../io.js';
import { type DeadLetterView, preview, viewOf } from './dead-letter.js';
import { QueueScan } from './queue-scan.js';
import { byReason } from './select.js';

export const DLQ_PEEK_HELP = `Usage: s3-ingest dlq peek --dlq-url URL [--reason R] [--limit N] [--json]

Shows dead-lettered or rejected messages without deleting them: reason, error, tenant, when it was sent,
and the first bytes of the body. Each message is received with a short visibility timeout and handed
back at once (visibility 0), so it stays in the queue.

Options:
  --dlq-url URL   the dead-letter or rejected queue (stack outputs DeadLetterQueueUrl, RejectedQueueUrl)
  --reason R      only messages with this reason attribute ("none": moved by SQS after maxReceiveCount)
  --limit N       show at most N messages (default 20)
  --json          print { messages, byReason } as one JSON object (bodies in full)
  -h, --help      this help`;

function line(v: DeadLetterView): string {
  const fields = [
    `reason=${v.reason}`,
    v.errorName === undefined ? '' : `error=${v.errorName}`,
    v.tenant === undefined ? '' : `tenant=${v.tenant}`,
    v.sentAt === undefined ? '' : `sent=${v.sentAt}`,
    v.receiveCount === undefined ? '' : `receives=${v.receiveCount}`,
    v.truncatedFromBytes === undefined ? '' : `truncated-from=${v.truncatedFromBytes}B`,
  ].filter(Boolean);
  const detail = v.detail === undefined ? '' : `\n  detail: ${v.detail}`;
  return `${v.messageId}  ${fields.join(' ')}${detail}\n  body: ${preview(v.body)}\n`;
}

export async function dlqPeekCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'dlq-url': { type: 'string' },
      reason: { type: 'string' },
      limit: { type: 'string', default: '20' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${DLQ_PEEK_HELP}\n`);
    return EXIT.ok;
  }
  const limit = Number(values.limit);
  if (values['dlq-url'] === undefined || !Number.isInteger(limit) || limit < 1) {
    io.stderr.write(`${DLQ_PEEK_HELP}\n`);
    return EXIT.usage;
  }
  const sqs = sqsClientFromEnv(io.env);
  try {
    const views: DeadLetterView[] = [];
    // Short visibility: a peek that dies mid-way hides nothing for long.
    const scan = new QueueScan(sqs, values['dlq-url'], {
      visibilitySeconds: 30,
      limit,
      select: byReason(values.reason),
    });
    await scan.run(async (batch) => {
      views.push(...batch.map(viewOf));
    });
    const byReasonCount: Record<string, number> = {};
    for (const v of views) byReasonCount[v.reason] = (byReasonCount[v.reason] ?? 0) + 1;
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ messages: views, byReason: byReasonCount })}\n`);
      return EXIT.ok;
    }
    for (const v of views) io.stdout.write(line(v));
    const summary = Object.entries(byReasonCount)
      .sort(([, a], [, b]) => b - a)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ');
    io.stdout.write(`${views.length} message(s)${summary ? `: ${summary}` : ''} (nothing deleted)\n`);
    return EXIT.ok;
  } finally {
    sqs.destroy();
  }
}
