import type { Resource } from '../../../../lib/db/resource.js';

/** The ids of every page of `resource.list` with pages of `limit`, in order; throws if it never ends. */
export async function allListedIds(resource: Resource, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await resource.list({ limit, ...(cursor !== undefined ? { cursor } : {}) });
    ids.push(...page.items.map((r) => r.id));
    cursor = page.cursor;
    if (cursor === undefined) return ids;
  }
  throw new Error('list never ended');
}
