import { createReadStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { S3IngestError } from '../errors/index.js';
import { InvalidMessageError } from '../ingest/errors.js';
import { validateWrite } from '../ingest/message/encode.js';
import type { ProducerWrite, ResourceNames } from '../ingest/message/types.js';
import { Producer } from '../ingest/producer.js';
import { sqsClientFromEnv } from './clients.js';
import { type CliIo, EXIT } from './io.js';

export const SEND_HELP = `Usage: s3-ingest send --queue-url URL [--json] [file.ndjson | -]

Sends contract v1 writes (one JSON object per line, "v" optional) to an ingestion queue.
A line's own "seq" is kept; lines without one get a monotonic seq (milliseconds x 1000 + a counter),
so later lines are newer for the handler's ordering.
Every line is validated first, with the handler's own rules; if any line is bad, the bad lines are
listed (line number and reason) and nothing is sent (exit code 2).

Options:
  --queue-url URL   the ingestion queue (required)
  --json            print the summary as one JSON object on stdout
  -h, --help        this help

Reads stdin when the file is "-" or absent; the input must be UTF-8. AWS settings follow the SDK: default credential chain,
AWS_REGION, AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_SQS. RESOURCES (JSON, as the handler's) when set also
refuses writes to undeclared resources. To a .fifo queue, each record's writes share a message group
(<tenant>/<resource>/<id>), so they stay in order; the deduplication id comes from "key" when given.`;

/** One refused line of the input. */
export interface LineIssue {
  line: number;
  reason: string;
  detail: string;
}

/** The input is not UTF-8: refused whole, since a replacement character would be sent as data. */
export class InputEncodingError extends S3IngestError {
  override readonly name = 'InputEncodingError';
}

/**
 * Reads the whole input as one UTF-8 stream. Decoding chunk by chunk would turn a character split across
 * two chunks (64 KiB each from a pipe) into U+FFFD; the streaming decoder carries the partial bytes over.
 * `fatal`: bytes that are not UTF-8 (or input ending inside a character) throw instead of being replaced.
 */
async function readInput(path: string, io: CliIo): Promise<string> {
  const source = path === '-' ? (io.stdin ?? process.stdin) : createReadStream(path);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let text = '';
  try {
    for await (const chunk of source) {
      // A string chunk is already decoded: what the decoder holds must end before it.
      text += typeof chunk === 'string' ? decoder.decode() + chunk : decoder.decode(chunk, { stream: true });
    }
    return text + decoder.decode();
  } catch (error) {
    if (
      error instanceof TypeError &&
      (error as { code?: string }).code === 'ERR_ENCODING_INVALID_ENCODED_DATA'
    ) {
      throw new InputEncodingError(`${path === '-' ? 'stdin' : path} is not valid UTF-8`, { cause: error });
    }
    throw error;
  }
}

/** Parses and validates NDJSON writes; blank lines are skipped. */
export function parseNdjsonWrites(
  text: string,
  resources?: ResourceNames,
): { writes: ProducerWrite[]; lines: number[]; issues: LineIssue[] } {
  const writes: ProducerWrite[] = [];
  const lines: number[] = [];
  const issues: LineIssue[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      issues.push({ line, reason: 'invalid-json', detail: (error as Error).message });
      return;
    }
    try {
      validateWrite(value as ProducerWrite, { resources });
      writes.push(value as ProducerWrite);
      lines.push(line);
    } catch (error) {
      if (!(error instanceof InvalidMessageError)) throw error;
      issues.push({ line, reason: error.reason, detail: error.detail });
    }
  });
  return { writes, lines, issues };
}

function resourcesFromEnv(env: CliIo['env']): ResourceNames | undefined {
  if (env.RESOURCES === undefined || env.RESOURCES === '') return undefined;
  const parsed: unknown = JSON.parse(env.RESOURCES);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('RESOURCES must be a JSON object (resource name -> JSON Schema)');
  }
  return parsed as Record<string, unknown>;
}

export async function sendCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'queue-url': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${SEND_HELP}\n`);
    return EXIT.ok;
  }
  const queueUrl = values['queue-url'];
  if (queueUrl === undefined || positionals.length > 1) {
    io.stderr.write(`${SEND_HELP}\n`);
    return EXIT.usage;
  }
  let resources: ResourceNames | undefined;
  try {
    resources = resourcesFromEnv(io.env);
  } catch (error) {
    io.stderr.write(`s3-ingest send: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  let text: string;
  try {
    text = await readInput(positionals[0] ?? '-', io);
  } catch (error) {
    if (!(error instanceof InputEncodingError)) throw error;
    io.stderr.write(`s3-ingest send: ${error.message}; nothing sent\n`);
    if (values.json)
      io.stdout.write(`${JSON.stringify({ sent: 0, failed: 0, rejected: [], error: error.message })}\n`);
    return EXIT.badInput;
  }
  const { writes, lines, issues } = parseNdjsonWrites(text, resources);
  if (issues.length > 0) {
    for (const i of issues) io.stderr.write(`line ${i.line}: ${i.reason}: ${i.detail}\n`);
    io.stderr.write(`s3-ingest send: ${issues.length} bad line(s); nothing sent\n`);
    if (values.json) io.stdout.write(`${JSON.stringify({ sent: 0, failed: 0, rejected: issues })}\n`);
    return EXIT.badInput;
  }
  const client = sqsClientFromEnv(io.env);
  try {
    const producer = new Producer({ queueUrl, client, ...(resources === undefined ? {} : { resources }) });
    const results = await producer.sendMany(writes);
    const failed = results.filter((r) => r.error !== undefined);
    for (const f of failed) io.stderr.write(`line ${lines[f.index]}: not sent: ${f.error?.message}\n`);
    const summary = { sent: results.length - failed.length, failed: failed.length, rejected: [] };
    io.stdout.write(
      values.json
        ? `${JSON.stringify(summary)}\n`
        : `sent ${summary.sent} write(s), ${summary.failed} failed\n`,
    );
    return failed.length > 0 ? EXIT.failure : EXIT.ok;
  } finally {
    client.destroy();
  }
}
