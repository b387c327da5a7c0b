import type { CreateResourceOptions, Database } from '../../lib/db/index.js';
import type { Document, Resource } from '../../lib/db/resource.js';

/** The shard counts the Database contract suites run over: the unsharded layout, and a sharded one. */
export const CONTRACT_SHARD_COUNTS = [1, 4] as const;

/**
 * `db`, whose `createResource` declares every resource with `shards` unless the call names its own: runs
 * a contract suite written for one resource layout over another, unchanged.
 */
export function withShards(db: Database, shards: number): Database {
  const declare = db.createResource.bind(db);
  db.createResource = <T extends Document = Document>(options: CreateResourceOptions): Promise<Resource<T>> =>
    declare<T>({ shards, ...options });
  return db;
}
