import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ID_PATTERN, RESOURCE_PATTERN, TENANT_PATTERN } from '../../../lib/db/keys.js';
import {
  deriveInsertId,
  encodeWrite,
  type IngestWrite,
  InvalidMessageError,
  KEY_PATTERN,
  type ProducerWrite,
  parseIngestMessage,
} from '../../../lib/ingest/index.js';

const resources = new Set(['orders', 'customers']);

/** The property: a valid write whose names match the key layout, or an InvalidMessageError; nothing else. */
function parsesSafely(body: string, messageId = 'prop-msg'): IngestWrite | InvalidMessageError {
  try {
    const write = parseIngestMessage(body, { messageId, resources });
    expect(write.tenant).toMatch(TENANT_PATTERN);
    expect(write.resource).toMatch(RESOURCE_PATTERN);
    expect(write.id).toMatch(ID_PATTERN);
    expect(write.id).not.toContain('..');
    expect(Number.isInteger(write.priority) && write.priority >= 0 && write.priority <= 100).toBe(true);
    if (write.op !== 'delete') expect(typeof write.data).toBe('object');
    return write;
  } catch (err) {
    if (!(err instanceof InvalidMessageError)) throw err;
    return err;
  }
}

/** Mostly `valid`, sometimes `hostile`: every field must be plausible often enough for whole messages to pass. */
function mostly<T>(valid: fc.Arbitrary<T>, ...hostile: fc.Arbitrary<unknown>[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { arbitrary: valid, weight: 12 },
    ...hostile.map((arbitrary) => ({ arbitrary, weight: 1 })),
  );
}

/** True when JSON.stringify would write some number of `value` as an integer literal beyond ±(2^53-1). */
function hasUnsafeIntegerLiteral(value: unknown): boolean {
  if (typeof value === 'number')
    return Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(hasUnsafeIntegerLiteral);
}

const anything = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));
const hostileNames = fc.constantFrom(
  '..',
  '../x',
  'a/b',
  '%2e%2e',
  'a\u0000',
  '\u0430cme',
  '__proto__',
  '',
  'A',
);
const hostileIds = fc.constantFrom(
  'a..b',
  '..',
  '/etc/passwd',
  'a/b',
  '%2F',
  'x'.repeat(129),
  '\uff4f-1',
  '.x',
);
/** Envelopes near the contract: each field is usually plausible, sometimes hostile, sometimes absent. */
const envelope = fc.record(
  {
    v: mostly(fc.constant(1), anything),
    tenant: mostly(
      fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/),
      hostileNames,
      fc.string({ unit: 'binary' }),
      anything,
    ),
    resource: mostly(
      fc.constantFrom('orders', 'customers'),
      fc.constantFrom('invoices', 'constructor'),
      hostileNames,
    ),
    op: mostly(fc.constantFrom('insert', 'upsert', 'update', 'delete'), anything),
    id: mostly(
      fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/),
      hostileIds,
      fc.string({ unit: 'binary' }),
    ),
    data: mostly(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })), anything),
    priority: mostly(
      fc.integer({ min: 0, max: 100 }),
      fc.integer({ min: -5, max: 105 }),
      fc.double(),
      anything,
    ),
    key: mostly(fc.stringMatching(/^[\x21-\x7e]{1,128}$/), fc.string({ unit: 'binary', maxLength: 140 })),
  },
  { requiredKeys: [] },
);

describe('parseIngestMessage properties', () => {
  it('arbitrary strings: a valid write or InvalidMessageError', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (body) => {
        parsesSafely(body);
      }),
      { numRuns: 500 },
    );
  });

  it('arbitrary JSON documents: a valid write or InvalidMessageError', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 6 }), (body) => {
        parsesSafely(body);
      }),
      { numRuns: 500 },
    );
  });

  it('near-contract envelopes: a valid write or InvalidMessageError, with names that match the layout', () => {
    let accepted = 0;
    fc.assert(
      fc.property(envelope, fc.uuid(), (message, messageId) => {
        const result = parsesSafely(JSON.stringify(message), messageId);
        if (!(result instanceof InvalidMessageError)) accepted++;
      }),
      { numRuns: 1000 },
    );
    // The generator must reach the accepting path too, or the pattern assertions above test nothing.
    expect(accepted).toBeGreaterThan(5);
  });

  it('bodies with refused keys spliced in anywhere are refused', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }),
        fc.constantFrom('__proto__', 'constructor', 'prototype'),
        (value, refused) => {
          const data = { wrap: value, [refused]: 1 };
          const body = JSON.stringify({ v: 1, tenant: 't', resource: 'orders', op: 'upsert', id: 'i', data });
          const result = parsesSafely(body);
          expect(result).toBeInstanceOf(InvalidMessageError);
          expect((result as InvalidMessageError).reason).toBe('forbidden-key');
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('derived insert ids', () => {
  it('are valid ids, deterministic, and the same for every delivery of a keyed message', () => {
    fc.assert(
      fc.property(fc.stringMatching(KEY_PATTERN), fc.uuid(), fc.uuid(), (key, first, second) => {
        const id = deriveInsertId({ key, messageId: first });
        expect(id).toMatch(ID_PATTERN);
        expect(id).toBe(deriveInsertId({ key, messageId: second }));
        const body = JSON.stringify({ v: 1, tenant: 't', resource: 'orders', op: 'insert', key, data: {} });
        expect(parseIngestMessage(body, { messageId: first }).id).toBe(id);
        expect(parseIngestMessage(body, { messageId: second }).id).toBe(id);
      }),
      { numRuns: 300 },
    );
  });

  it('follow the SQS message id when there is no key, and differ between messages', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1 }), fc.uuid(), (messageId, other) => {
        fc.pre(messageId !== other);
        const id = deriveInsertId({ messageId });
        expect(id).toMatch(ID_PATTERN);
        expect(deriveInsertId({ messageId })).toBe(id);
        expect(deriveInsertId({ messageId: other })).not.toBe(id);
      }),
      { numRuns: 300 },
    );
  });
});

describe('encodeWrite round trip', () => {
  const validWrite: fc.Arbitrary<ProducerWrite> = fc
    .record({
      tenant: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/),
      resource: fc.constantFrom('orders', 'customers'),
      op: fc.constantFrom('insert', 'upsert', 'update'),
      id: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_:-]{0,127}$/),
      data: fc
        .dictionary(
          fc.string({ unit: 'binary' }).filter((k) => !['__proto__', 'constructor', 'prototype'].includes(k)),
          fc.jsonValue({ maxDepth: 3 }),
        )
        // Nested values may hold refused keys too; a valid write has none at any depth.
        .filter((d) => !/"(__proto__|constructor|prototype)":/.test(JSON.stringify(d)))
        // Nor integers JSON would write as a literal beyond 2^53 (the contract refuses them: they would change).
        .filter((d) => !hasUnsafeIntegerLiteral(d)),
      priority: fc.integer({ min: 0, max: 100 }),
    })
    .map((w) => w as ProducerWrite);

  it('the handler parses exactly what the producer encoded', () => {
    fc.assert(
      fc.property(validWrite, (write) => {
        const { body, parsed } = encodeWrite(write, { resources });
        const received = parseIngestMessage(body, { messageId: 'delivered', resources });
        expect(received).toMatchObject({
          tenant: write.tenant,
          resource: write.resource,
          op: write.op,
          id: write.id,
          priority: write.priority,
        });
        expect(received.data).toEqual(JSON.parse(JSON.stringify(write.data)));
        expect(parsed.data).toEqual(received.data);
      }),
      { numRuns: 300 },
    );
  });
});
