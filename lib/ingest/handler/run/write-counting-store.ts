import type {
  ListObjectsInput,
  ListObjectsPage,
  ObjectHead,
  ObjectStore,
  PutObjectInput,
  StoreCallOptions,
  StoredObject,
} from '../../../db/object-store.js';

/**
 * The container's store, reporting every write call (PUT, DELETE) before it is sent: each pool attempt is
 * one store call (the pool owns retries, the S3 client makes one attempt), so `Writes` counts every S3
 * write request, retries included, not records.
 */
export class WriteCountingStore implements ObjectStore {
  constructor(
    private readonly inner: ObjectStore,
    /** Called before each write request is sent, with its object key. */
    private readonly onWrite: (key: string) => void,
  ) {}

  get bucket(): string {
    return this.inner.bucket;
  }

  put(input: PutObjectInput, options?: StoreCallOptions): Promise<{ etag: string }> {
    this.onWrite(input.key);
    return this.inner.put(input, options);
  }

  delete(key: string, options?: StoreCallOptions): Promise<void> {
    this.onWrite(key);
    return this.inner.delete(key, options);
  }

  get(key: string, options?: StoreCallOptions): Promise<StoredObject | undefined> {
    return this.inner.get(key, options);
  }

  head(key: string, options?: StoreCallOptions): Promise<ObjectHead | undefined> {
    return this.inner.head(key, options);
  }

  list(input: ListObjectsInput, options?: StoreCallOptions): Promise<ListObjectsPage> {
    return this.inner.list(input, options);
  }
}
