import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encodeWrite,
  InvalidMessageError,
  type InvalidMessageReason,
  MAX_DATA_BYTES,
  type ProducerWrite,
  parseIngestMessage,
  validateWrite,
} from '../../../lib/ingest/index.js';
import { escapedJsonBytes, escapeForSqs } from '../../../lib/ingest/sqs-text.js';

// Issue 14, defect 12: the contract's limits must be the ones the code enforces, measured the way SQS
// counts. `data` of U+FFFE passed the 256,000-byte check (3 bytes each raw) but travels as `\ufffe`
// (6 bytes each), so the producer built a body SQS's classic limit refuses; integers beyond 2^53 were
// silently changed while `1e400` was refused for the same reason (JSON cannot carry the number exactly).

/** SQS's classic message limit, which the contract promises every valid message fits. */
const SQS_CLASSIC_LIMIT_BYTES = 262_144;

const write = (data: Record<string, unknown>): ProducerWrite => ({
  tenant: 'acme',
  resource: 'orders',
  op: 'upsert',
  id: 'o-1',
  data,
});

function reasonOf(fn: () => unknown): { reason: InvalidMessageReason; detail: string } | 'accepted' {
  try {
    fn();
    return 'accepted';
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidMessageError);
    return { reason: (err as InvalidMessageError).reason, detail: (err as InvalidMessageError).detail };
  }
}

const bodyOf = (dataJson: string) =>
  `{"v":1,"tenant":"acme","resource":"orders","op":"upsert","id":"o-1","data":${dataJson}}`;

describe('data size is measured as encoded for SQS', () => {
  it('refuses U+FFFE data whose raw size passes but whose encoded size does not', () => {
    const data = { s: '\ufffe'.repeat(85_000) }; // 255,008 bytes raw, 510,008 as sent
    expect(reasonOf(() => validateWrite(write(data)))).toMatchObject({ reason: 'too-large' });
    const body = bodyOf(JSON.stringify(data).replace(/\ufffe/g, '\\ufffe'));
    expect(reasonOf(() => parseIngestMessage(body, { messageId: 'm-1' }))).toMatchObject({
      reason: 'too-large',
    });
  });

  it('accepts data at the limit, and its body fits SQS', () => {
    // 6 bytes of `{"s":""}` framing; the rest U+FFFE at 6 encoded bytes each, padded with ASCII.
    const count = Math.floor((MAX_DATA_BYTES - 8) / 6);
    const s = '\ufffe'.repeat(count) + 'x'.repeat(MAX_DATA_BYTES - 8 - count * 6);
    const encoded = encodeWrite(write({ s }));
    expect(encoded.bytes).toBeLessThanOrEqual(SQS_CLASSIC_LIMIT_BYTES);
    expect(reasonOf(() => validateWrite(write({ s: `${s}x` })))).toMatchObject({ reason: 'too-large' });
  });

  it('every write the producer accepts fits SQS, whatever characters its data holds (property)', () => {
    const char = fc.constantFrom('a', 'é', '€', '😀', '\ufffe', '\uffff', '\u0001', '"', '\\', '\ud800');
    fc.assert(
      fc.property(char, fc.integer({ min: 40_000, max: 130_000 }), (c, n) => {
        const w = write({ s: c.repeat(n) });
        let encoded: ReturnType<typeof encodeWrite>;
        try {
          encoded = encodeWrite(w);
        } catch (err) {
          expect((err as InvalidMessageError).reason).toBe('too-large');
          return;
        }
        expect(encoded.bytes).toBeLessThanOrEqual(SQS_CLASSIC_LIMIT_BYTES);
        const json = JSON.stringify(w.data);
        expect(escapedJsonBytes(json)).toBe(Buffer.byteLength(escapeForSqs(json)));
      }),
      { numRuns: 40 },
    );
  });
});

describe('numbers JSON cannot carry exactly are refused alike', () => {
  it.each([
    ['an integer literal above 2^53', '{"n":9007199254740993}', 'data.n'],
    ['2^53 itself (not a safe integer)', '{"a":[1,{"n":9007199254740992}]}', 'data.a.1.n'],
    ['a negative one', '{"n":-9007199254740993}', 'data.n'],
    ['a 20-digit one', '{"big":12345678901234567890}', 'data.big'],
    ['an overflow to Infinity (as before)', '{"n":1e400}', 'data.n'],
  ])('refuses %s with reason schema naming the field', (_, data, field) => {
    const result = reasonOf(() => parseIngestMessage(bodyOf(data), { messageId: 'm-1' }));
    expect(result).toMatchObject({ reason: 'schema' });
    expect((result as { detail: string }).detail.startsWith(`${field}: `)).toBe(true);
  });

  it.each([
    ['the largest safe integer', '{"n":9007199254740991}', 9007199254740991],
    ['a float written with an exponent', '{"n":1e300}', 1e300],
    ['a float written with a fraction', '{"n":12345678901234567890.5}', Number('12345678901234567890.5')],
    ['a digit string inside a string', '{"n":"9007199254740993"}', '9007199254740993'],
  ])('accepts %s', (_, data, value) => {
    const parsed = parseIngestMessage(bodyOf(data), { messageId: 'm-1' });
    expect(parsed.op !== 'delete' && parsed.data.n).toBe(value);
  });

  it('the producer refuses a JS number that would be sent as an unsafe integer literal', () => {
    expect(reasonOf(() => validateWrite(write({ n: 2 ** 53 })))).toMatchObject({ reason: 'schema' });
    expect(reasonOf(() => validateWrite(write({ n: 2 ** 53 - 1 })))).toBe('accepted');
    // 1e21 and above serialize with an exponent: a float, carried as written.
    expect(reasonOf(() => validateWrite(write({ n: 1e21 })))).toBe('accepted');
  });
});
