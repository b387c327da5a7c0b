import { describe, expect, it } from 'vitest';
import { newLeaseId } from '../../../lib/semaphore/lease-id.js';

describe('newLeaseId', () => {
  it('is 16 base64url characters (the `by` each schedule write stores, less than half a UUID) and unique', () => {
    const ids = Array.from({ length: 10_000 }, () => newLeaseId());
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
