// `s3-ingest/db`: the per-tenant document store on S3. Key building, storage-call plumbing and the store's
// internals stay inside (import them by path in this repository's tests).

export type {
  BehaviourClock,
  BehaviourModel,
  StorageDecision,
  StorageOutcome,
  StorageRequestKind,
} from './behaviour-model.js';
export type { ConnectionTarget } from './connection-string.js';
export { parseConnectionString } from './connection-string.js';
export type { CopyLayoutResult } from './copy-layout.js';
export { copyLayout } from './copy-layout.js';
export type { CreateResourceOptions, DatabaseOptions } from './database.js';
export { Database } from './database.js';
export * from './errors.js';
export { DEFAULT_TENANT, isValidId, isValidResource, isValidTenant } from './keys.js';
export type { MemoryObjectStoreOptions } from './memory-object-store.js';
export { dropMemoryBucket, MemoryBucket, MemoryObjectStore, memoryBucket } from './memory-object-store.js';
export type {
  ListObjectsInput,
  ListObjectsPage,
  ObjectHead,
  ObjectStore,
  PutObjectInput,
  StoreCallOptions,
  StoredObject,
} from './object-store.js';
export { PreconditionFailedError } from './object-store.js';
export type { OpenDatabaseOptions } from './open-database.js';
export { DATABASE_POOL_DEFAULTS, openDatabase } from './open-database.js';
export type { RemoveOldLayoutResult } from './remove-old-layout.js';
export { removeOldLayout } from './remove-old-layout.js';
export type {
  CallOptions,
  Document,
  InsertManyResult,
  InsertOptions,
  ListOptions,
  ListPage,
  RecordFields,
  StoredRecord,
} from './resource.js';
export { Resource } from './resource.js';
export { ResourceLayout } from './resource-layout.js';
export type { CreateS3ClientOptions } from './s3-client.js';
export { createS3Client } from './s3-client.js';
export { S3ObjectStore } from './s3-object-store.js';
export { S3_PREFIX_WRITES_PER_SECOND, s3Autotune } from './s3-rate-prior.js';
export type { JsonSchema } from './schema.js';
export { isValidShardCount, MAX_SHARDS, shardOf } from './shard-hash.js';
