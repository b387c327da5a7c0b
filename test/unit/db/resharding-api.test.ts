import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as db from '../../../lib/db/index.js';

// The resharding steps (docs/decisions/sharded-keys.md) have an operator run `copyLayout` between two
// `ResourceLayout`s. The package's `exports` map opens `s3-ingest/db` (lib/db/index.ts) and no deeper path,
// so whatever the steps name must be exported there, or the steps cannot be followed from the package.

describe('resharding from the public entry point (s3-ingest/db)', () => {
  it('exports copyLayout and ResourceLayout, and they copy a resource 1 -> 4 shards', async () => {
    const api = db as Record<string, unknown>;
    expect(typeof api.copyLayout).toBe('function');
    expect(typeof api.ResourceLayout).toBe('function');
    const { copyLayout, ResourceLayout } = api as unknown as typeof import('../../../lib/db/copy-layout.js') &
      typeof import('../../../lib/db/resource-layout.js');
    const store = new db.MemoryObjectStore({ bucket: `reshard-${randomUUID().slice(0, 8)}` });
    const one = await new db.Database({ tenant: 'acme', store }).createResource({ name: 'orders' });
    await one.insert({ n: 1 }, { id: 'o-1' });
    const result = await copyLayout(
      store,
      new ResourceLayout('acme', 'orders', '', 1),
      new ResourceLayout('acme', 'orders', '', 4),
    );
    expect(result).toMatchObject({ copied: 1, unchanged: 0, conflicts: [], completed: true });
    expect(typeof api.removeOldLayout).toBe('function');
    expect(typeof api.LayoutCopiedError).toBe('function');
    expect(typeof api.LayoutNotCopiedError).toBe('function');
  });
});
