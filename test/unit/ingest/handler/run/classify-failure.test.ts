// classifyFailure, the README's failure classification table row by row: permanent only when retrying can
// never help, a deadline when the invocation's signal aborted, a storage failure for what the error taxonomy
// calls transient (and the store's own "try again" errors), anything else redelivered as unexpected.
import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  RecordExistsError,
  RecordNotFoundError,
  ValidationError,
} from '../../../../../lib/db/errors.js';
import { RecordVanishedError } from '../../../../../lib/ingest/handler/errors.js';
import { classifyFailure } from '../../../../../lib/ingest/handler/run/apply-write.js';

const open = new AbortController().signal;
const aborted = (() => {
  const c = new AbortController();
  c.abort(new Error('cutoff'));
  return c.signal;
})();

const validation = () =>
  new ValidationError('customers', [{ instancePath: '/age', field: 'age', message: 'must be >= 0' }]);
const notFound = () => new RecordNotFoundError('orders', 'o-1');
const slowDown = () =>
  Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });
const forbidden = () =>
  Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });

describe('classifyFailure', () => {
  it('a schema violation, a missing record and an existing one are permanent, even after the deadline', () => {
    for (const signal of [open, aborted]) {
      const v = validation();
      expect(classifyFailure(v, signal)).toEqual({ kind: 'permanent', reason: 'schema-violation', error: v });
      const n = notFound();
      expect(classifyFailure(n, signal)).toEqual({ kind: 'permanent', reason: 'record-not-found', error: n });
      const e = new RecordExistsError('orders', 'o-1');
      expect(classifyFailure(e, signal)).toEqual({ kind: 'permanent', reason: 'record-exists', error: e });
    }
  });

  it('anything else after the deadline is a deadline', () => {
    for (const error of [slowDown(), forbidden(), new ConflictError('orders', 'o-1', '"e"'), undefined]) {
      expect(classifyFailure(error, aborted)).toEqual({ kind: 'transient', cause: 'deadline', error });
    }
  });

  it('transient errors, a concurrent change and a vanished record are storage failures', () => {
    for (const error of [
      slowDown(),
      new ConflictError('orders', 'o-1', '"e"'),
      new RecordVanishedError('o-1', notFound()),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
    ]) {
      expect(classifyFailure(error, open)).toEqual({ kind: 'transient', cause: 'storage', error });
    }
  });

  it('anything outside the taxonomy is redelivered as unexpected', () => {
    for (const error of [forbidden(), new TypeError('x is undefined'), 'a string', undefined]) {
      expect(classifyFailure(error, open)).toEqual({ kind: 'transient', cause: 'unexpected', error });
    }
  });
});
