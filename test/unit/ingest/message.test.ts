import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PRIORITY,
  deriveInsertId,
  INVALID_MESSAGE_REASONS,
  InvalidMessageError,
  type InvalidMessageReason,
  parseIngestMessage,
} from '../../../lib/ingest/index.js';
import { loadBadMessages, loadGoodMessages } from '../../fixtures/messages.js';

const bad = loadBadMessages();
const good = loadGoodMessages();

function reasonOf(body: string, meta: Parameters<typeof parseIngestMessage>[1]): InvalidMessageReason {
  try {
    parseIngestMessage(body, meta);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidMessageError);
    return (err as InvalidMessageError).reason;
  }
  throw new Error('expected InvalidMessageError, got a write');
}

const upsert = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    v: 1,
    tenant: 'acme',
    resource: 'orders',
    op: 'upsert',
    id: 'o-1',
    data: { n: 1 },
    ...over,
  });

describe('hostile corpus (test/fixtures/bad-messages.json)', () => {
  it('holds at least 50 messages and covers every reason', () => {
    expect(bad.messages.length).toBeGreaterThanOrEqual(50);
    expect(new Set(bad.messages.map((m) => m.reason))).toEqual(new Set(INVALID_MESSAGE_REASONS));
  });

  it.each(bad.messages.map((m) => [m.name, m] as const))('%s', (_name, message) => {
    let thrown: unknown;
    try {
      parseIngestMessage(message.body, { messageId: 'corpus-1', resources: bad.resources });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidMessageError);
    const err = thrown as InvalidMessageError;
    expect(err.name).toBe('InvalidMessageError');
    expect({ reason: err.reason, detail: err.detail }).toMatchObject({ reason: message.reason });
    expect(err.detail.length).toBeGreaterThan(0);
    // A detail quotes at most a preview of the input, never a 10,000-character id or a 1 MiB body.
    expect(err.message.length).toBeLessThan(400);
  });
});

describe('valid messages (test/fixtures/good-messages.json)', () => {
  it.each(good.messages.map((m) => [m.name, m] as const))('%s', (_name, message) => {
    const write = parseIngestMessage(message.body, {
      messageId: message.messageId,
      resources: good.resources,
    });
    expect(write).toMatchObject(message.expect);
    expect(write.messageId).toBe(message.messageId);
    const sent = JSON.parse(message.body) as { data?: unknown };
    expect(write.data).toEqual(sent.data);
  });
});

describe('parseIngestMessage', () => {
  it('names the field at fault in detail', () => {
    const protoInData =
      '{"v":1,"tenant":"a","resource":"r","op":"upsert","id":"o","data":{"a":{"b":{"__proto__":1}}}}';
    const cases: Array<[string, string]> = [
      [upsert({ tenant: 'A' }), 'tenant:'],
      [upsert({ resource: 'R' }), 'resource:'],
      [upsert({ id: 'a/b' }), 'id:'],
      [upsert({ priority: 500 }), 'priority:'],
      [protoInData, 'data.a.b.__proto__:'],
      [upsert({ tenant: undefined }), 'tenant: required'],
    ];
    for (const [body, field] of cases) {
      const err = (() => {
        try {
          parseIngestMessage(body, { messageId: 'x' });
        } catch (e) {
          return e as InvalidMessageError;
        }
      })();
      expect(err?.detail.startsWith(field), `${body} -> ${err?.detail}`).toBe(true);
    }
  });

  it('reports one stable reason when several fields are wrong', () => {
    expect(reasonOf(upsert({ tenant: '../x', id: '../y' }), { messageId: 'x' })).toBe('invalid-tenant');
    expect(reasonOf(upsert({ op: 'nope', tenant: '../x' }), { messageId: 'x' })).toBe('invalid-op');
    expect(reasonOf(upsert({ tenant: undefined, id: '../y' }), { messageId: 'x' })).toBe('schema');
    expect(reasonOf(upsert({ v: 2, tenant: '../x' }), { messageId: 'x' })).toBe('unsupported-version');
  });

  it('defaults priority and keeps the given one', () => {
    expect(parseIngestMessage(upsert(), { messageId: 'x' }).priority).toBe(DEFAULT_PRIORITY);
    expect(parseIngestMessage(upsert({ priority: 7 }), { messageId: 'x' }).priority).toBe(7);
  });

  it('accepts any well-formed resource when no resources are declared, and checks own names only', () => {
    expect(parseIngestMessage(upsert({ resource: 'invoices' }), { messageId: 'x' }).resource).toBe(
      'invoices',
    );
    const declared = { orders: {} };
    expect(reasonOf(upsert({ resource: 'constructor' }), { messageId: 'x', resources: declared })).toBe(
      'unknown-resource',
    );
    expect(reasonOf(upsert({ resource: 'invoices' }), { messageId: 'x', resources: declared })).toBe(
      'unknown-resource',
    );
    expect(parseIngestMessage(upsert(), { messageId: 'x', resources: declared }).resource).toBe('orders');
  });

  it('derives the id of an insert from key, else from messageId, the same on redelivery', () => {
    const withKey = JSON.stringify({
      v: 1,
      tenant: 'acme',
      resource: 'orders',
      op: 'insert',
      key: 'K1',
      data: {},
    });
    const a = parseIngestMessage(withKey, { messageId: 'first-delivery' });
    const b = parseIngestMessage(withKey, { messageId: 'second-send' });
    expect(a.id).toBe(b.id);
    expect(a.id).toBe(deriveInsertId({ key: 'K1', messageId: 'ignored' }));
    expect(a.idSource).toBe('key');

    const noKey = JSON.stringify({ v: 1, tenant: 'acme', resource: 'orders', op: 'insert', data: {} });
    const c = parseIngestMessage(noKey, { messageId: 'msg-1' });
    expect(c.id).toBe(parseIngestMessage(noKey, { messageId: 'msg-1' }).id);
    expect(c.id).not.toBe(parseIngestMessage(noKey, { messageId: 'msg-2' }).id);
    expect(c.idSource).toBe('message-id');
    expect(c.id).not.toBe(a.id);
  });

  it('keeps a given id over a key', () => {
    const body = JSON.stringify({
      v: 1,
      tenant: 'acme',
      resource: 'orders',
      op: 'insert',
      id: 'x1',
      key: 'K',
      data: {},
    });
    expect(parseIngestMessage(body, { messageId: 'm' })).toMatchObject({
      id: 'x1',
      idSource: 'message',
      key: 'K',
    });
  });

  it('returns data whose prototype is untouched', () => {
    const write = parseIngestMessage(upsert({ data: { nested: { a: 1 } } }), { messageId: 'x' });
    expect(Object.getPrototypeOf(write.data)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a refused key spelled so that JSON.parse makes it an own property', () => {
    const body =
      '{"v":1,"tenant":"acme","resource":"orders","op":"upsert","id":"o","data":{"__proto__":{"p":1}}}';
    expect(reasonOf(body, { messageId: 'x' })).toBe('forbidden-key');
    expect(({} as Record<string, unknown>).p).toBeUndefined();
  });

  it('treats a missing messageId as a programming error, not a bad message', () => {
    expect(() => parseIngestMessage(upsert(), { messageId: '' })).toThrow(TypeError);
  });

  it('rejects 500,000 levels of nesting before parsing them', () => {
    const body = upsert({ data: { a: '@' } }).replace('"@"', `${'['.repeat(500_000)}${']'.repeat(500_000)}`);
    const started = performance.now();
    expect(reasonOf(body, { messageId: 'x' })).toBe('too-deep');
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('ignores brackets inside strings when measuring depth', () => {
    const write = parseIngestMessage(upsert({ data: { s: '[[[[{{{{'.repeat(20), q: '\\"[[[' } }), {
      messageId: 'x',
    });
    expect(write.op).toBe('upsert');
  });
});
