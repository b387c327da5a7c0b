// parseIngestMessage's every refusal, with the reason and the detail a dead letter carries, and the exact
// shape of the writes it returns. Issue 14's mutation testing left parse.ts at 78%: details, boundaries and
// optional fields were not asserted.
import { describe, expect, it } from 'vitest';
import { InvalidMessageError } from '../../../lib/ingest/errors.js';
import { MAX_DATA_BYTES } from '../../../lib/ingest/message/limits.js';
import { parseIngestMessage } from '../../../lib/ingest/message/parse.js';

const meta = { messageId: 'm-1' };
const body = (fields: Record<string, unknown>) =>
  JSON.stringify({ v: 1, tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: {}, ...fields });

/** The refusal of `text`: `reason: detail`. */
function refusal(text: unknown, m: Parameters<typeof parseIngestMessage>[1] = meta): string {
  try {
    parseIngestMessage(text as string, m);
  } catch (err) {
    if (!(err instanceof InvalidMessageError)) throw err;
    return `${err.reason}: ${err.detail}`;
  }
  throw new Error(`accepted: ${String(text).slice(0, 80)}`);
}

describe('parseIngestMessage refusals: reason and detail', () => {
  it('invalid JSON keeps the parser error as its cause', () => {
    const error = (() => {
      try {
        parseIngestMessage('{"v":1,', meta);
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(InvalidMessageError);
    expect((error as InvalidMessageError).cause).toBeInstanceOf(SyntaxError);
  });

  it('a meta without a message id is a programming error, not a refused message', () => {
    for (const messageId of [undefined, '', 42])
      expect(() => parseIngestMessage(body({}), { messageId } as never)).toThrow(
        new TypeError('parseIngestMessage: meta.messageId must be a non-empty string'),
      );
  });

  it('the body as a whole', () => {
    expect(refusal(42)).toBe('schema: body: expected a string');
    expect(refusal('{"v":1,')).toMatch(/^invalid-json: body: /);
    expect(refusal('[1]')).toBe('schema: body: expected a JSON object, got an array');
    expect(refusal('null')).toBe('schema: body: expected a JSON object, got null');
    expect(refusal('"s"')).toBe('schema: body: expected a JSON object, got "s"');
    expect(refusal(`[${'['.repeat(33)}${']'.repeat(33)}]`)).toBe(
      'too-deep: body: nested more than 33 levels',
    );
  });

  it('a body over 1 MiB counts UTF-8 bytes, even when its characters are fewer than a third of that', () => {
    // 350,000 three-byte characters: 1,050,000 bytes in 350,002 UTF-16 units.
    expect(refusal(`"${'€'.repeat(350_000)}"`)).toBe('too-large: body: more than 1048576 bytes');
    // Just under: it reaches JSON parsing (and is refused for what it is, not its size).
    expect(refusal(`"${'€'.repeat(349_000)}"`)).toMatch(/^schema: body: expected a JSON object/);
    expect(refusal(`"${'a'.repeat(1_048_577)}"`)).toBe('too-large: body: more than 1048576 bytes');
  });

  it('the envelope fields, in a fixed order', () => {
    expect(refusal(body({ v: undefined }))).toBe('schema: v: required');
    expect(refusal(body({ v: 2 }))).toBe('unsupported-version: v: only 1 is supported, got number 2');
    expect(refusal(body({ op: 'merge' }))).toBe(
      'invalid-op: op: must be one of insert, upsert, update, delete, got "merge"',
    );
    expect(refusal(body({ tenant: 'A' }))).toBe(
      'invalid-tenant: tenant: must match ^[a-z0-9][a-z0-9_-]{0,62}$, got "A"',
    );
    expect(refusal(body({ resource: 'R' }))).toBe(
      'invalid-resource: resource: must match ^[a-z0-9][a-z0-9_-]{0,62}$, got "R"',
    );
    expect(refusal(body({ id: 'a/b' }))).toMatch(
      /^invalid-id: id: must match .* without "\.\.", got "a\/b"$/,
    );
    expect(refusal(body({ key: '' }))).toBe(
      'invalid-key: key: must be 1..128 printable ASCII characters, got ""',
    );
    expect(refusal(body({ key: 7 }))).toBe(
      'invalid-key: key: must be 1..128 printable ASCII characters, got number 7',
    );
    expect(refusal(body({ data: [] }))).toBe('schema: data: must be a JSON object, got an array');
    expect(refusal(body({ data: null }))).toBe('schema: data: must be a JSON object, got null');
  });

  it('priority: an integer from 0 to 100', () => {
    for (const priority of [0, 100])
      expect(parseIngestMessage(body({ priority }), meta).priority).toBe(priority);
    for (const priority of [-1, 101, 1.5, '5']) {
      expect(refusal(body({ priority }))).toMatch(
        /^invalid-priority: priority: must be an integer from 0 to 100, got /,
      );
    }
  });

  it('unknown fields: the first five named', () => {
    expect(refusal(body({ extra: 1 }))).toBe('schema: unknown field(s) "extra"');
    const many = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`x${i}`, i]));
    expect(refusal(body(many))).toBe('schema: unknown field(s) "x0", "x1", "x2", "x3", "x4"');
  });

  it('resources: undeclared ones refused, from a record or a set', () => {
    expect(refusal(body({}), { ...meta, resources: { invoices: {} } })).toBe(
      'unknown-resource: resource: "orders" is not declared',
    );
    expect(refusal(body({}), { ...meta, resources: new Set(['invoices']) })).toBe(
      'unknown-resource: resource: "orders" is not declared',
    );
    expect(parseIngestMessage(body({}), { ...meta, resources: new Set(['orders']) }).resource).toBe('orders');
  });

  it('per-op requirements', () => {
    for (const op of ['upsert', 'update', 'delete'])
      expect(refusal(body({ op, id: undefined, data: op === 'delete' ? undefined : {} }))).toBe(
        `missing-id: id: required for ${op}`,
      );
    expect(refusal(body({ op: 'delete' }))).toBe('schema: data: not allowed for delete');
    for (const op of ['insert', 'upsert', 'update'])
      expect(refusal(body({ op, data: undefined }))).toBe(`missing-data: data: required for ${op}`);
  });

  it('numbers JSON cannot carry, with their path', () => {
    expect(refusal(body({ data: { a: { b: 1 } } }).replace('"b":1', '"b":1e400'))).toBe(
      'schema: data.a.b: number out of range',
    );
    expect(refusal(body({ data: { a: 1 } }).replace('"a":1', '"a":9007199254740993'))).toBe(
      'schema: data.a: integer 9007199254740993 is beyond ±(2^53-1) and would change in JSON; send it as a string',
    );
    // A long literal is quoted by its first 40 characters only (the detail goes into a dead letter).
    const long = '9'.repeat(60);
    expect(refusal(body({ data: { a: 1 } }).replace('"a":1', `"a":${long}`))).toBe(
      `schema: data.a: integer ${'9'.repeat(40)} is beyond ±(2^53-1) and would change in JSON; send it as a string`,
    );
    // A float that is large and integer-valued is not a literal to report: accepted.
    expect(parseIngestMessage(body({ data: { a: 1e300 } }), meta).data).toEqual({ a: 1e300 });
  });

  it('data over 256,000 bytes as sent, measured with what SQS needs escaped', () => {
    const fits = { s: 'a'.repeat(MAX_DATA_BYTES - 8) }; // {"s":"…"} is 8 bytes more
    expect(JSON.stringify(fits)).toHaveLength(MAX_DATA_BYTES);
    expect(parseIngestMessage(body({ data: fits }), meta).data).toEqual(fits);
    expect(refusal(body({ data: { s: 'a'.repeat(MAX_DATA_BYTES - 7) } }))).toBe(
      `too-large: data: ${MAX_DATA_BYTES + 1} bytes encoded, at most ${MAX_DATA_BYTES}`,
    );
  });
});

describe('parseIngestMessage writes', () => {
  it('a delete carries no data; a write without key carries no key', () => {
    const del = parseIngestMessage(body({ op: 'delete', data: undefined, priority: 3 }), meta);
    // Strict: a field the write does not have is absent, not present as undefined.
    expect(del).toStrictEqual({
      tenant: 'acme',
      resource: 'orders',
      op: 'delete',
      id: 'o-1',
      idSource: 'message',
      priority: 3,
      messageId: 'm-1',
      // No seq and no SentTimestamp in `meta`: ordered as the oldest (issue 15).
      seq: 0,
      seqSource: 'sent-timestamp',
    });
    const up = parseIngestMessage(body({ data: { a: 1 } }), meta);
    expect(up).toStrictEqual({
      tenant: 'acme',
      resource: 'orders',
      op: 'upsert',
      id: 'o-1',
      idSource: 'message',
      priority: 50,
      messageId: 'm-1',
      seq: 0,
      seqSource: 'sent-timestamp',
      data: { a: 1 },
    });
    expect(parseIngestMessage(body({ key: 'k-1' }), meta)).toMatchObject({ key: 'k-1', idSource: 'message' });
  });

  it('an insert without id takes its id from the key, else from the message id', () => {
    expect(parseIngestMessage(body({ op: 'insert', id: undefined, key: 'k' }), meta)).toMatchObject({
      idSource: 'key',
      id: expect.stringMatching(/^k-[0-9a-f]{32}$/),
    });
    expect(parseIngestMessage(body({ op: 'insert', id: undefined }), meta)).toMatchObject({
      idSource: 'message-id',
      id: expect.stringMatching(/^m-[0-9a-f]{32}$/),
    });
  });
});
