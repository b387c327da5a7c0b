import type { MemoryObjectStore } from '../../../../lib/db/memory-object-store.js';
import type { ObjectStore } from '../../../../lib/db/object-store.js';

/** `store` with some methods replaced (the memory store keeps private state: no prototype tricks). */
export function wrap(store: MemoryObjectStore, overrides: Partial<ObjectStore>): ObjectStore {
  return {
    bucket: store.bucket,
    put: (input, options) => store.put(input, options),
    get: (key, options) => store.get(key, options),
    head: (key, options) => store.head(key, options),
    delete: (key, options) => store.delete(key, options),
    list: (input, options) => store.list(input, options),
    ...overrides,
  };
}
