import { type FileHandle, open } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Message } from '@aws-sdk/client-sqs';
import { sqsClientFromEnv } from '../clients.js';
import { type CliIo, EXIT } from '../io.js';
import { type Clock, systemClock } from './clock.js';
import { confirm, refusal } from './confirm.js';
import { ExportFileExistsError } from './errors.js';
import { exportLineOf } from './export-line.js';
import { QueueScan } from './queue-scan.js';
import { byReason } from './select.js';

export const DLQ_EXPORT_HELP = `Usage: s3-ingest dlq export --dlq-url URL FILE [--reason R] [--purge] [--yes]

Writes every message of a dead-letter or rejected queue to FILE as NDJSON (one object per message:
messageId, reason, errorName, detail, tenant, sourceMessageId, sentAt, receiveCount, body, origin (id,
sentAt, sourceArn), attributes (each with its dataType; binary values in base64) and systemAttributes).
"s3-ingest dlq import FILE --to URL" sends them back as redrive would. FILE must not exist. Every
message received stays hidden until the export ends (renewed however long it takes), so none is written
twice. The messages stay in the queue unless --purge is given: then, once FILE is written
and closed, exactly the exported messages are deleted (messages arriving meanwhile are kept).

Options:
  --dlq-url URL   the dead-letter or rejected queue
  --reason R      only messages with this reason ("none": moved by SQS after maxReceiveCount)
  --purge         delete the exported messages after writing FILE (asks first on a terminal)
  --yes           do not ask for confirmation (scripts)
  -h, --help      this help`;

/** Creates `file` for writing; never overwrites one (an earlier export may be the only copy of purged messages). */
async function createExportFile(file: string): Promise<FileHandle> {
  try {
    return await open(file, 'wx');
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST') throw new ExportFileExistsError(file);
    throw error;
  }
}

/** What the command runs on: tests pass a clock to drive the scan's visibility renewals. */
export interface ExportDependencies {
  readonly clock?: Clock;
}

export async function dlqExportCommand(
  argv: string[],
  io: CliIo,
  { clock = systemClock }: ExportDependencies = {},
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'dlq-url': { type: 'string' },
      reason: { type: 'string' },
      purge: { type: 'boolean', default: false },
      yes: { type: 'boolean', short: 'y', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${DLQ_EXPORT_HELP}\n`);
    return EXIT.ok;
  }
  const [file, ...extra] = positionals;
  const queueUrl = values['dlq-url'];
  if (queueUrl === undefined || file === undefined || extra.length > 0) {
    io.stderr.write(`${DLQ_EXPORT_HELP}\n`);
    return EXIT.usage;
  }
  const out = await createExportFile(file);
  const sqs = sqsClientFromEnv(io.env);
  const exported: Message[] = [];
  // Assigned inside the scan's callback, which TypeScript's narrowing does not follow.
  let outcome = 'kept' as 'kept' | 'purged' | 'declined' | 'not-interactive';
  try {
    // Long enough for someone to answer the purge question while every exported message stays hidden.
    const scan = new QueueScan(sqs, queueUrl, {
      visibilitySeconds: values.purge ? 600 : 60,
      select: byReason(values.reason),
      clock,
    });
    await scan.run(
      async (batch) => {
        await out.write(batch.map(exportLineOf).join(''));
        exported.push(...batch);
      },
      async () => {
        await out.sync();
        await out.close();
        if (!values.purge || exported.length === 0) return;
        const answer = await confirm(
          io,
          `Wrote ${exported.length} message(s) to ${file}. Delete them from ${queueUrl}?`,
          values.yes,
        );
        if (answer !== 'confirmed') {
          outcome = answer;
          return;
        }
        await scan.delete(exported);
        outcome = 'purged';
      },
    );
  } finally {
    sqs.destroy();
    await out.close().catch(() => {});
  }
  const state = outcome === 'purged' ? 'deleted from the queue' : 'still in the queue';
  io.stdout.write(`exported ${exported.length} message(s) to ${file}; ${state}\n`);
  if (outcome === 'declined' || outcome === 'not-interactive') {
    io.stderr.write(`s3-ingest dlq export: ${refusal(outcome)}\n`);
    return outcome === 'declined' ? EXIT.failure : EXIT.usage;
  }
  return EXIT.ok;
}
