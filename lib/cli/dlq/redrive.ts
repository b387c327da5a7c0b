import { parseArgs } from 'node:util';
import type { Message } from '@aws-sdk/client-sqs';
import { sqsClientFromEnv } from '../clients.js';
import { type CliIo, EXIT } from '../io.js';
import { type Clock, systemClock } from './clock.js';
import { confirm, refusal } from './confirm.js';
import { CopySender, type OutgoingCopy } from './copy-sender.js';
import { CONTRACT_REASONS } from './dead-letter.js';
import { planCopy } from './letter-copy.js';
import { MoveSummary } from './move-summary.js';
import { isQueue, QueueUrls } from './queue-address.js';
import { QueueScan } from './queue-scan.js';
import { byReason } from './select.js';
import { parseTombstoneOptions, TOMBSTONE_HELP } from './tombstone-options.js';

export const DLQ_REDRIVE_HELP = `Usage: s3-ingest dlq redrive --dlq-url URL [--to QUEUE_URL] [--reason R] [--rate N] [--limit N]
                           [--include-rejected] [--tombstone-days N] [--past-horizon] [--json] [--yes]

Sends dead-lettered messages back to the queue each came from (SQS's DeadLetterQueueSourceArn, or the
sourceQueueArn the function wrote on its letters), then deletes each one from the dead-letter queue once
SQS has accepted the copy. A copy keeps its origin's message id and send time (s3-ingest-origin,
s3-ingest-origin-sent): it never overwrites a newer write and never creates a second record.

A redrive moves what was in the queue when it started, each message at most once, then stops and prints
what it moved and what it left, and why. Left: letters whose source queue is unknown, contract rejections
(invalid-json, schema, ..., schema-violation: they fail the same way on every delivery) unless
--include-rejected, bodies the function had to truncate (export them), letters older than the tombstone
horizon unless --past-horizon, and letters that arrived after the start (copies this run sent that failed
again).

Options:
  --dlq-url URL        the dead-letter or rejected queue to move from
  --to QUEUE_URL       only move letters that came from this queue (the others are left)
  --reason R           only messages with this reason ("none": moved by SQS after maxReceiveCount)
  --rate N             at most N messages per second (default 50)
  --limit N            stop after N letters (moved or left)
  --include-rejected   also move contract rejections
${TOMBSTONE_HELP}
  --json               print the summary as JSON ({ moved, refused, skipped, left })
  --yes                do not ask for confirmation (scripts); otherwise asked on a terminal
  -h, --help           this help

Exit code: 0 when every copy was accepted, 1 when the destination refused any (they stay in the queue).`;

/** What the command runs on: tests pass a clock to measure pacing and scan length. */
export interface RedriveDependencies {
  readonly clock?: Clock;
}

export async function dlqRedriveCommand(
  argv: string[],
  io: CliIo,
  { clock = systemClock }: RedriveDependencies = {},
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'dlq-url': { type: 'string' },
      to: { type: 'string' },
      reason: { type: 'string' },
      rate: { type: 'string', default: '50' },
      limit: { type: 'string' },
      'include-rejected': { type: 'boolean', default: false },
      'tombstone-days': { type: 'string' },
      'past-horizon': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      yes: { type: 'boolean', short: 'y', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${DLQ_REDRIVE_HELP}\n`);
    return EXIT.ok;
  }
  const rate = Number(values.rate);
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  const tombstone = parseTombstoneOptions(values['tombstone-days'], values['past-horizon']);
  const { 'dlq-url': from, to, reason } = values;
  const badNumber = !(rate > 0) || (limit !== undefined && !(Number.isInteger(limit) && limit > 0));
  if (from === undefined || badNumber || tombstone === undefined) {
    io.stderr.write(`${DLQ_REDRIVE_HELP}\n`);
    return EXIT.usage;
  }
  const includeRejected = values['include-rejected'];
  if (reason !== undefined && CONTRACT_REASONS.has(reason) && !includeRejected) {
    io.stderr.write(
      `s3-ingest dlq redrive: ${reason} is a contract rejection; it fails the same way on every delivery. Pass --include-rejected if the cause (e.g. RESOURCES) was fixed.\n`,
    );
    return EXIT.usage;
  }
  const what = reason === undefined ? 'messages' : `messages with reason ${reason}`;
  const rejectedNote = includeRejected ? ' (contract rejections included)' : '';
  const destination = to ?? 'the queue each came from';
  const answer = await confirm(
    io,
    `Move ${what}${rejectedNote} from ${from} to ${destination}, deleting each from the source once sent?`,
    values.yes,
  );
  if (answer !== 'confirmed') {
    io.stderr.write(`s3-ingest dlq redrive: ${refusal(answer)}\n`);
    return answer === 'declined' ? EXIT.failure : EXIT.usage;
  }

  const sqs = sqsClientFromEnv(io.env);
  const summary = new MoveSummary();
  const startedAt = clock.now();
  const movedOrigins = new Set<string>();
  const urls = new QueueUrls(sqs);
  const sender = new CopySender(sqs, rate, clock);
  const matchesReason = byReason(reason);
  try {
    const scan = new QueueScan(sqs, from, { visibilitySeconds: 60, limit, clock });
    await scan.run(async (batch) => {
      const outgoing: (OutgoingCopy & { letter: Message })[] = [];
      for (const letter of batch) {
        if (!matchesReason(letter)) {
          summary.unselected++;
          continue;
        }
        // A letter sent after the start is a copy this run sent that failed again (or a new failure).
        if (Number(letter.Attributes?.SentTimestamp) > startedAt) {
          summary.skip('arrived-during-redrive');
          continue;
        }
        const decision = planCopy(letter, { includeRejected, ...tombstone, now: clock.now() });
        if (decision.kind === 'skip') {
          summary.skip(decision.reason);
          continue;
        }
        const { copy } = decision;
        if (movedOrigins.has(copy.origin.id)) {
          summary.skip('moved-this-run');
          continue;
        }
        if (to !== undefined && !isQueue(copy.origin.sourceArn, to)) {
          summary.skip('other-source');
          continue;
        }
        const queueUrl = to ?? (await urls.urlOf(copy.origin.sourceArn));
        if (queueUrl === undefined) {
          summary.skip('unknown-source');
          continue;
        }
        movedOrigins.add(copy.origin.id);
        outgoing.push({ key: letter.MessageId ?? '', queueUrl, copy, letter });
      }
      const { taken, refused } = await sender.send(outgoing);
      for (const r of refused) io.stderr.write(`not moved: ${r.outgoing.key}: ${r.why}\n`);
      // Delete only what the destination listed as Successful: a message must never end up in neither queue.
      await scan.delete(taken.map((t) => (t as (typeof outgoing)[number]).letter));
      summary.moved += taken.length;
      summary.refused += refused.length;
    });
  } finally {
    sqs.destroy();
  }
  io.stdout.write(
    values.json
      ? `${JSON.stringify(summary)}\n`
      : summary.line('moved', destination, to ?? 'the destination'),
  );
  return summary.refused > 0 ? EXIT.failure : EXIT.ok;
}
