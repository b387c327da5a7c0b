import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Message } from '@aws-sdk/client-sqs';
import { sqsClientFromEnv } from '../clients.js';
import { type CliIo, EXIT } from '../io.js';
import { type Clock, systemClock } from './clock.js';
import { CopySender, type OutgoingCopy } from './copy-sender.js';
import { messageOfLine } from './export-line.js';
import { planCopy } from './letter-copy.js';
import { MoveSummary } from './move-summary.js';
import { isQueue } from './queue-address.js';
import { parseTombstoneOptions, TOMBSTONE_HELP } from './tombstone-options.js';

export const DLQ_IMPORT_HELP = `Usage: s3-ingest dlq import FILE --to QUEUE_URL [--rate N] [--include-rejected]
                           [--tombstone-days N] [--past-horizon] [--json]

Sends the messages of a "dlq export" FILE to QUEUE_URL as redrive would have: each copy keeps its
producer's attributes (data types and binary values included) and its origin's message id and send time,
so it never overwrites a newer write and never creates a second record. Only messages that came from
QUEUE_URL are sent (the others, and those whose source is unknown, are left: import each producer's with
its own queue). Left too: contract rejections unless --include-rejected, truncated bodies, and messages
older than the tombstone horizon unless --past-horizon. FILE is read whole and checked before anything is
sent; nothing is deleted anywhere.

Options:
  --to QUEUE_URL       the queue the messages came from (stack output QueueUrl or QueueUrl-<producer>)
  --rate N             at most N messages per second (default 50)
  --include-rejected   also send contract rejections
${TOMBSTONE_HELP}
  --json               print the summary as JSON ({ moved, refused, skipped, left })
  -h, --help           this help

Exit code: 0 when every copy was accepted, 1 when the queue refused any or FILE is not an export.`;

/** What the command runs on: tests pass a clock to measure pacing. */
export interface ImportDependencies {
  readonly clock?: Clock;
}

async function readExport(file: string): Promise<Message[]> {
  const lines = (await readFile(file, 'utf8')).split('\n');
  return lines.flatMap((text, index) =>
    text.trim() === '' ? [] : [messageOfLine(text, `${file}:${index + 1}`)],
  );
}

export async function dlqImportCommand(
  argv: string[],
  io: CliIo,
  { clock = systemClock }: ImportDependencies = {},
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      to: { type: 'string' },
      rate: { type: 'string', default: '50' },
      'include-rejected': { type: 'boolean', default: false },
      'tombstone-days': { type: 'string' },
      'past-horizon': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${DLQ_IMPORT_HELP}\n`);
    return EXIT.ok;
  }
  const [file, ...extra] = positionals;
  const { to } = values;
  const rate = Number(values.rate);
  const tombstone = parseTombstoneOptions(values['tombstone-days'], values['past-horizon']);
  if (file === undefined || extra.length > 0 || to === undefined || !(rate > 0) || tombstone === undefined) {
    io.stderr.write(`${DLQ_IMPORT_HELP}\n`);
    return EXIT.usage;
  }
  const messages = await readExport(file);
  const summary = new MoveSummary();
  const outgoing: OutgoingCopy[] = [];
  const policy = { includeRejected: values['include-rejected'], ...tombstone, now: clock.now() };
  for (const m of messages) {
    const decision = planCopy(m, policy);
    if (decision.kind === 'skip') summary.skip(decision.reason);
    else if (!isQueue(decision.copy.origin.sourceArn, to)) summary.skip('other-source');
    else outgoing.push({ key: m.MessageId ?? '', queueUrl: to, copy: decision.copy });
  }
  const sqs = sqsClientFromEnv(io.env);
  try {
    const { taken, refused } = await new CopySender(sqs, rate, clock).send(outgoing);
    for (const r of refused) io.stderr.write(`not sent: ${r.outgoing.key}: ${r.why}\n`);
    summary.moved = taken.length;
    summary.refused = refused.length;
  } finally {
    sqs.destroy();
  }
  io.stdout.write(values.json ? `${JSON.stringify(summary)}\n` : summary.line('sent', to, to));
  return summary.refused > 0 ? EXIT.failure : EXIT.ok;
}
