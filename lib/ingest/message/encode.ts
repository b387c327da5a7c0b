import { InvalidMessageError, preview } from '../errors.js';
import { escapeForSqs } from '../sqs-text.js';
import { parseIngestMessage } from './parse.js';
import type { IngestWrite, ProducerWrite, ResourceNames } from './types.js';

export interface EncodeOptions {
  /** Declared resources; when given, a write to another resource fails with `unknown-resource`. */
  readonly resources?: ResourceNames;
}

export interface EncodedWrite {
  /** The SQS message body (contract v1 JSON). */
  readonly body: string;
  /** UTF-8 size of `body`, what SQS counts against its limits. */
  readonly bytes: number;
  /** The write exactly as the handler will parse it (an `insert` without id shows a placeholder id). */
  readonly parsed: IngestWrite;
}

// Stands in for the SQS message id, which does not exist before sending; only used to derive a
// placeholder id for inserts without `id` and `key`, never sent.
const UNSENT_MESSAGE_ID = 'unsent';

// JSON.stringify would silently turn NaN and Infinity into null: inside `data`, a different record than
// the caller's. (At the top level the null reaches the parser, which names the field, e.g. `priority`.)
function nonFiniteRefuser(message: object) {
  return function refuseNonFinite(this: unknown, key: string, value: unknown): unknown {
    if (this !== message && typeof value === 'number' && !Number.isFinite(value)) {
      throw new InvalidMessageError('schema', `data: ${JSON.stringify(key)}: number out of range (${value})`);
    }
    return value;
  };
}

/**
 * Encodes a write as a contract v1 body and validates it with the very parser the handler uses, so the
 * producer refuses exactly what the consumer would dead-letter. Throws `InvalidMessageError`.
 */
export function encodeWrite(write: ProducerWrite, options: EncodeOptions = {}): EncodedWrite {
  if (typeof write !== 'object' || write === null || Array.isArray(write)) {
    throw new InvalidMessageError('schema', `write: expected an object, got ${preview(write)}`);
  }
  let json: string;
  try {
    // Spread, so unknown fields reach the strict parser and are refused instead of silently dropped.
    const message = { v: 1, ...write };
    json = JSON.stringify(message, nonFiniteRefuser(message));
  } catch (cause) {
    if (cause instanceof InvalidMessageError) throw cause;
    if (cause instanceof RangeError) {
      // JSON.stringify recurses: only nesting far past the limit overflows the stack.
      throw new InvalidMessageError('too-deep', 'data: nested too deep to serialize', { cause });
    }
    // BigInt, cycles, a throwing toJSON: not representable in a message.
    const reason = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0];
    throw new InvalidMessageError('schema', `data: not serializable as JSON (${reason})`, { cause });
  }
  // SQS refuses U+FFFE / U+FFFF in bodies. JSON.stringify already escapes control characters and lone
  // surrogates, so these two are all that is left, and only inside JSON strings, where `\ufffe` means the same.
  const body = escapeForSqs(json);
  const parsed = parseIngestMessage(body, { messageId: UNSENT_MESSAGE_ID, resources: options.resources });
  return { body, bytes: Buffer.byteLength(body, 'utf8'), parsed };
}

/** Throws `InvalidMessageError` unless `write` is a valid contract v1 write. Same rules as the handler. */
export function validateWrite(write: ProducerWrite, options: EncodeOptions = {}): void {
  encodeWrite(write, options);
}
