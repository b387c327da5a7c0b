import { isValidId, isValidResource, isValidTenant } from '../../db/keys.js';
import { InvalidMessageError, type InvalidMessageReason, preview } from '../errors.js';
import { escapedJsonBytes } from '../sqs-text.js';
import { deriveInsertId } from './derive-id.js';
import {
  DEFAULT_PRIORITY,
  firstUnsafeIntegerLiteral,
  type JsonScan,
  KEY_PATTERN,
  MAX_BODY_BYTES,
  MAX_DATA_BYTES,
  MAX_DATA_DEPTH,
  MAX_PRIORITY,
  MIN_PRIORITY,
  nestsDeeperThan,
  scanJson,
} from './limits.js';
import { type IngestWrite, type JsonObject, type ResourceNames, WRITE_OPS } from './types.js';

/** What the SQS record adds to its body. */
export interface MessageMeta {
  /** The SQS `messageId`: derives the id of an `insert` that has neither `id` nor `key`. Non-empty. */
  readonly messageId: string;
  /**
   * The declared resources (`config.resources`, or a set of names). A write to another resource fails with
   * `unknown-resource`. Omitted: any well-formed resource name passes.
   */
  readonly resources?: ResourceNames;
  /**
   * SQS's `SentTimestamp` attribute of the record (epoch milliseconds, as SQS sends it: a string). A message
   * without `seq` is ordered by it, x 1000 (`seqSource: 'sent-timestamp'`). Absent or not a non-negative
   * safe integer: such a message gets `seq` 0 (older than every sequenced write).
   */
  readonly sentTimestamp?: string | number;
}

/** `SentTimestamp` x 1000, the stand-in `seq` of a message without one (0 when there is no usable timestamp). */
export function seqFromSentTimestamp(sentTimestamp: string | number | undefined): number {
  // Number(undefined) and Number('x') are NaN, Number('') is 0: each ends as seq 0, like a missing timestamp.
  const ms = Number(sentTimestamp);
  if (!Number.isSafeInteger(ms) || ms < 0) return 0;
  const seq = ms * 1000;
  return Number.isSafeInteger(seq) ? seq : 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The envelope's fields; anything else in a message is refused (`schema`, "unknown field"). */
const ENVELOPE_FIELDS = new Set(['v', 'tenant', 'resource', 'op', 'id', 'data', 'priority', 'key', 'seq']);
const REQUIRED_FIELDS = ['v', 'tenant', 'resource', 'op'] as const;
const OPS: ReadonlySet<unknown> = new Set(WRITE_OPS);

/** One envelope field's rule: the reason it fails with and the check (`undefined` = valid). */
interface FieldRule {
  readonly field: string;
  readonly reason: InvalidMessageReason;
  readonly problem: (value: unknown) => string | undefined;
}

const mustMatch = (ok: (v: unknown) => boolean, text: string) => (value: unknown) =>
  ok(value) ? undefined : text;

/**
 * Checked in this order, so a message with several wrong fields has one stable reason. Written by hand (a
 * dozen comparisons): the contract is small, and a schema library would be ~60 KB more in every Lambda
 * bundle for it.
 */
const FIELD_RULES: readonly FieldRule[] = [
  {
    field: 'op',
    reason: 'invalid-op',
    problem: mustMatch((v) => OPS.has(v), `must be one of ${WRITE_OPS.join(', ')}`),
  },
  {
    field: 'tenant',
    reason: 'invalid-tenant',
    problem: mustMatch(isValidTenant, 'must match ^[a-z0-9][a-z0-9_-]{0,62}$'),
  },
  {
    field: 'resource',
    reason: 'invalid-resource',
    problem: mustMatch(isValidResource, 'must match ^[a-z0-9][a-z0-9_-]{0,62}$'),
  },
  {
    field: 'id',
    reason: 'invalid-id',
    problem: mustMatch(isValidId, 'must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$ without ".."'),
  },
  {
    field: 'key',
    reason: 'invalid-key',
    problem: mustMatch(
      (v) => typeof v === 'string' && KEY_PATTERN.test(v),
      'must be 1..128 printable ASCII characters',
    ),
  },
  {
    field: 'priority',
    reason: 'invalid-priority',
    problem: mustMatch(
      (v) => Number.isInteger(v) && (v as number) >= MIN_PRIORITY && (v as number) <= MAX_PRIORITY,
      `must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}`,
    ),
  },
  {
    field: 'seq',
    reason: 'invalid-seq',
    problem: mustMatch(
      (v) => Number.isSafeInteger(v) && (v as number) >= 0,
      'must be a non-negative integer of at most 2^53 - 1',
    ),
  },
  { field: 'data', reason: 'schema', problem: mustMatch(isPlainObject, 'must be a JSON object') },
];

/** The raw envelope once its shape is checked. */
interface Envelope {
  readonly tenant: string;
  readonly resource: string;
  readonly op: IngestWrite['op'];
  readonly id?: string;
  readonly data?: JsonObject;
  readonly priority?: number;
  readonly key?: string;
  readonly seq?: number;
}

/** Throws the first shape error of `raw` (required fields, then each field's rule, then unknown fields). */
function checkEnvelope(raw: Record<string, unknown>): Envelope {
  for (const field of REQUIRED_FIELDS) {
    if (raw[field] === undefined) throw new InvalidMessageError('schema', `${field}: required`);
  }
  for (const { field, reason, problem } of FIELD_RULES) {
    const value = raw[field];
    if (value === undefined) continue;
    const text = problem(value);
    if (text !== undefined) throw new InvalidMessageError(reason, `${field}: ${text}, got ${preview(value)}`);
  }
  const unknown = Object.keys(raw).filter((k) => !ENVELOPE_FIELDS.has(k));
  if (unknown.length > 0) {
    const names = unknown.slice(0, 5).map((k) => preview(k));
    throw new InvalidMessageError('schema', `unknown field(s) ${names.join(', ')}`);
  }
  return raw as unknown as Envelope;
}

function isDeclared(resources: ResourceNames, name: string): boolean {
  // Object.hasOwn, not `in`: a resource named `constructor` must not be found on Object.prototype.
  return resources instanceof Set ? resources.has(name) : Object.hasOwn(resources, name);
}

/**
 * Parses and validates one SQS message body against contract v1 (see lib/ingest/README.md).
 * Returns the write to apply; throws `InvalidMessageError` (a permanent failure, with `reason` and a
 * `detail` naming the field) for anything else. Never throws any other error for any body.
 */
export function parseIngestMessage(body: string, meta: MessageMeta): IngestWrite {
  if (typeof meta.messageId !== 'string' || meta.messageId === '') {
    throw new TypeError('parseIngestMessage: meta.messageId must be a non-empty string');
  }
  if (typeof body !== 'string') throw new InvalidMessageError('schema', `body: expected a string`);
  // UTF-16 length is a cheap lower bound of the byte length; only count bytes when it matters.
  if (body.length > MAX_BODY_BYTES / 3 && Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) {
    throw new InvalidMessageError('too-large', `body: more than ${MAX_BODY_BYTES} bytes`);
  }
  // The envelope is level 1, so `data` at its 32-level limit puts the body at 33.
  if (nestsDeeperThan(body, MAX_DATA_DEPTH + 1)) {
    throw new InvalidMessageError('too-deep', `body: nested more than ${MAX_DATA_DEPTH + 1} levels`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (cause) {
    throw new InvalidMessageError('invalid-json', `body: ${(cause as Error).message}`, { cause });
  }
  if (!isPlainObject(raw))
    throw new InvalidMessageError('schema', `body: expected a JSON object, got ${preview(raw)}`);

  const scan = scanJson(raw);
  if (scan.forbiddenKeyPath !== undefined) {
    throw new InvalidMessageError('forbidden-key', `${scan.forbiddenKeyPath}: refused key`);
  }
  if (raw.v !== undefined && raw.v !== 1) {
    throw new InvalidMessageError('unsupported-version', `v: only 1 is supported, got ${preview(raw.v)}`);
  }
  const message = checkEnvelope(raw);

  if (meta.resources !== undefined && !isDeclared(meta.resources, message.resource)) {
    throw new InvalidMessageError(
      'unknown-resource',
      `resource: ${preview(message.resource)} is not declared`,
    );
  }
  if (message.op !== 'insert' && message.id === undefined) {
    throw new InvalidMessageError('missing-id', `id: required for ${message.op}`);
  }
  if (message.op === 'delete') {
    if (message.data !== undefined) throw new InvalidMessageError('schema', 'data: not allowed for delete');
  } else {
    if (message.data === undefined)
      throw new InvalidMessageError('missing-data', `data: required for ${message.op}`);
    checkDataLimits(message.data, scan, body);
  }

  const base = {
    tenant: message.tenant,
    resource: message.resource,
    priority: message.priority ?? DEFAULT_PRIORITY,
    messageId: meta.messageId,
    ...(message.key === undefined ? {} : { key: message.key }),
    ...(message.seq === undefined
      ? { seq: seqFromSentTimestamp(meta.sentTimestamp), seqSource: 'sent-timestamp' as const }
      : { seq: message.seq, seqSource: 'message' as const }),
  };
  const id = message.id ?? deriveInsertId({ key: message.key, messageId: meta.messageId });
  const idSource = message.id !== undefined ? 'message' : message.key !== undefined ? 'key' : 'message-id';
  if (message.op === 'delete') return { ...base, op: 'delete', id, idSource };
  return { ...base, op: message.op, id, idSource, data: message.data as JsonObject };
}

function checkDataLimits(data: JsonObject, scan: JsonScan, body: string): void {
  if (scan.nonFinitePath !== undefined) {
    throw new InvalidMessageError('schema', `${scan.nonFinitePath}: number out of range`);
  }
  // The envelope's numbers (v, priority) are valid by now, so an unsafe integer literal is inside data.
  const literal = scan.largeIntegerPaths === undefined ? undefined : firstUnsafeIntegerLiteral(body);
  if (literal !== undefined) {
    const path = scan.largeIntegerPaths?.get(Number(literal)) ?? 'data';
    throw new InvalidMessageError(
      'schema',
      `${path}: integer ${literal.slice(0, 40)} is beyond ±(2^53-1) and would change in JSON; send it as a string`,
    );
  }
  // Measured as it travels: compact JSON, UTF-8, with what SQS refuses escaped (U+FFFE is 3 bytes raw and
  // 6 as `\ufffe`), so a message whose data passes always fits SQS's classic 256 KiB limit.
  const bytes = escapedJsonBytes(JSON.stringify(data));
  if (bytes > MAX_DATA_BYTES) {
    throw new InvalidMessageError('too-large', `data: ${bytes} bytes encoded, at most ${MAX_DATA_BYTES}`);
  }
}
