import * as z from 'zod';
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
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Shape only; the limits zod cannot express (depth, size, refused keys) are checked by hand.
const envelopeSchema = z.strictObject({
  v: z.literal(1),
  tenant: z.string().refine(isValidTenant, 'must match ^[a-z0-9][a-z0-9_-]{0,62}$'),
  resource: z.string().refine(isValidResource, 'must match ^[a-z0-9][a-z0-9_-]{0,62}$'),
  op: z.enum(WRITE_OPS),
  id: z.string().refine(isValidId, 'must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$ without ".."').optional(),
  data: z.custom<JsonObject>(isPlainObject, 'must be a JSON object').optional(),
  priority: z.int().min(MIN_PRIORITY).max(MAX_PRIORITY).optional(),
  key: z.string().regex(KEY_PATTERN, 'must be 1..128 printable ASCII characters').optional(),
});

const REQUIRED_FIELDS = new Set(['v', 'tenant', 'resource', 'op']);
/** When several fields are wrong, the first in this order is reported, so a message has one stable reason. */
const FIELD_REASONS: ReadonlyArray<readonly [string, InvalidMessageReason]> = [
  ['op', 'invalid-op'],
  ['tenant', 'invalid-tenant'],
  ['resource', 'invalid-resource'],
  ['id', 'invalid-id'],
  ['key', 'invalid-key'],
  ['priority', 'invalid-priority'],
  ['data', 'schema'],
];

function shapeError(raw: Record<string, unknown>, issues: readonly z.core.$ZodIssue[]): InvalidMessageError {
  for (const field of REQUIRED_FIELDS) {
    if (raw[field] === undefined) return new InvalidMessageError('schema', `${field}: required`);
  }
  for (const [field, reason] of FIELD_REASONS) {
    const issue = issues.find((i) => i.path[0] === field);
    if (issue !== undefined) {
      return new InvalidMessageError(reason, `${field}: ${issue.message}, got ${preview(raw[field])}`);
    }
  }
  const unknown = issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown !== undefined && unknown.code === 'unrecognized_keys') {
    const names = unknown.keys.slice(0, 5).map((k) => preview(k));
    return new InvalidMessageError('schema', `unknown field(s) ${names.join(', ')}`);
  }
  const first = issues[0];
  return new InvalidMessageError('schema', `${first?.path.join('.') ?? ''}: ${first?.message ?? 'invalid'}`);
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
  const parsed = envelopeSchema.safeParse(raw);
  if (!parsed.success) throw shapeError(raw, parsed.error.issues);
  const message = parsed.data;

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
  };
  const id = message.id ?? deriveInsertId({ key: message.key, messageId: meta.messageId });
  const idSource = message.id !== undefined ? 'message' : message.key !== undefined ? 'key' : 'message-id';
  if (message.op === 'delete') return { ...base, op: 'delete', id, idSource };
  return { ...base, op: message.op, id, idSource, data: message.data! };
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
