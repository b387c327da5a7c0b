import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  type Message,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import { sqsClientFromEnv } from '../clients.js';
import { type CliIo, EXIT } from '../io.js';
import { confirm, refusal } from './confirm.js';
import { CONTRACT_REASONS, producerAttributes, viewOf } from './dead-letter.js';
import { QueueScan } from './queue-scan.js';
import { byReason, isContractRejection } from './select.js';

export const DLQ_REDRIVE_HELP = `Usage: s3-ingest dlq redrive --dlq-url URL --to QUEUE_URL [--reason R] [--rate N] [--limit N]
                           [--include-rejected] [--yes]

Sends dead-lettered messages back to the ingest queue (--to, always explicit: messages the function
rejected itself have no source queue), then deletes each one from the dead-letter queue once SQS has
accepted the copy. Contract rejections (invalid-json, schema, invalid-tenant, ..., schema-violation) can
never succeed on a retry and are left alone unless --include-rejected is given. Messages whose body the
function had to truncate are never redriven (export them instead).

Options:
  --dlq-url URL        the dead-letter or rejected queue to move from
  --to QUEUE_URL       the ingest queue to move to (stack output QueueUrl)
  --reason R           only messages with this reason ("none": moved by SQS after maxReceiveCount)
  --rate N             at most N messages per second (default 50)
  --limit N            move at most N messages
  --include-rejected   also move contract rejections
  --yes                do not ask for confirmation (scripts); otherwise asked on a terminal
  -h, --help           this help`;

const SEND_BATCH = 10;

/** Spaces sends so that no more than `perSecond` messages leave in any second since the start. */
class Pacer {
  readonly #started = performance.now();
  #sent = 0;

  constructor(private readonly perSecond: number) {}

  async take(n: number): Promise<void> {
    const due = this.#started + (this.#sent / this.perSecond) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    this.#sent += n;
  }
}

function entryOf(m: Message, index: number, fifo: boolean): SendMessageBatchRequestEntry {
  return {
    Id: String(index),
    MessageBody: m.Body ?? '',
    MessageAttributes: producerAttributes(m),
    ...(fifo
      ? {
          MessageGroupId: m.Attributes?.MessageGroupId ?? 'redrive',
          MessageDeduplicationId: m.MessageId,
        }
      : {}),
  };
}

interface RedriveCounts {
  moved: number;
  failed: number;
  skippedRejected: Set<string>;
  skippedTruncated: Set<string>;
}

export async function dlqRedriveCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'dlq-url': { type: 'string' },
      to: { type: 'string' },
      reason: { type: 'string' },
      rate: { type: 'string', default: '50' },
      limit: { type: 'string' },
      'include-rejected': { type: 'boolean', default: false },
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
  const { 'dlq-url': from, to, reason } = values;
  const badNumber = !(rate > 0) || (limit !== undefined && !(Number.isInteger(limit) && limit > 0));
  if (from === undefined || to === undefined || badNumber) {
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
  const answer = await confirm(
    io,
    `Move ${what}${rejectedNote} from ${from} to ${to}, deleting each from the source once sent?`,
    values.yes,
  );
  if (answer !== 'confirmed') {
    io.stderr.write(`s3-ingest dlq redrive: ${refusal(answer)}\n`);
    return answer === 'declined' ? EXIT.failure : EXIT.usage;
  }

  const sqs = sqsClientFromEnv(io.env);
  const counts: RedriveCounts = {
    moved: 0,
    failed: 0,
    skippedRejected: new Set(),
    skippedTruncated: new Set(),
  };
  const matchesReason = byReason(reason);
  const select = (m: Message): boolean => {
    if (!matchesReason(m)) return false;
    if (!includeRejected && isContractRejection(m)) {
      counts.skippedRejected.add(m.MessageId ?? '');
      return false;
    }
    if (viewOf(m).truncatedFromBytes !== undefined) {
      counts.skippedTruncated.add(m.MessageId ?? '');
      return false;
    }
    return true;
  };
  const pacer = new Pacer(rate);
  const sendBatch = Math.max(1, Math.min(SEND_BATCH, Math.floor(rate)));
  const fifo = to.endsWith('.fifo');
  try {
    const scan = new QueueScan(sqs, from, { visibilitySeconds: 60, limit, select });
    await scan.run(async (batch) => {
      for (let i = 0; i < batch.length; i += sendBatch) {
        const chunk = batch.slice(i, i + sendBatch);
        await pacer.take(chunk.length);
        const out = await sqs.send(
          new SendMessageBatchCommand({ QueueUrl: to, Entries: chunk.map((m, n) => entryOf(m, n, fifo)) }),
        );
        for (const f of out.Failed ?? []) {
          io.stderr.write(`not moved: ${chunk[Number(f.Id)]?.MessageId}: ${f.Code}: ${f.Message ?? ''}\n`);
        }
        // Delete only what the destination listed as Successful: an entry SQS reports neither way may not
        // be stored, and a message must never end up in neither queue.
        const accepted = new Set((out.Successful ?? []).map((s) => Number(s.Id)));
        const sent = chunk.filter((_, n) => accepted.has(n));
        await scan.delete(sent);
        counts.moved += sent.length;
        counts.failed += chunk.length - sent.length;
      }
    });
  } finally {
    sqs.destroy();
  }
  const notes = [
    counts.skippedRejected.size > 0
      ? `${counts.skippedRejected.size} contract rejection(s) left (--include-rejected moves them)`
      : '',
    counts.skippedTruncated.size > 0
      ? `${counts.skippedTruncated.size} truncated message(s) left (export them)`
      : '',
    counts.failed > 0 ? `${counts.failed} refused by ${to}` : '',
  ].filter(Boolean);
  io.stdout.write(
    `moved ${counts.moved} message(s) to ${to}${notes.length ? `; ${notes.join('; ')}` : ''}\n`,
  );
  return counts.failed > 0 ? EXIT.failure : EXIT.ok;
}
