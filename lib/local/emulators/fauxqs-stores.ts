import { findPackageJSON } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { BuildAppOptions } from 'fauxqs';
import { LocalStackError } from '../errors.js';

/** An object as fauxqs's S3 store keeps it (the fields the embedded S3's own listing reads). */
export interface StoredS3Object {
  key: string;
  etag: string;
  contentLength: number;
  lastModified: Date;
}

/** The part of fauxqs's S3 store the embedded S3's own answers use: its objects, per bucket. */
export interface S3StoreView {
  /** bucket name -> object key -> object. */
  readonly buckets: Map<string, Map<string, StoredS3Object>>;
  /** Deletes one object (none there: nothing happens; no such bucket: throws fauxqs's `NoSuchBucket`). */
  deleteObject(bucket: string, key: string): void;
}

export interface FauxqsStores {
  /** What `buildApp({ stores })` takes. */
  stores: NonNullable<BuildAppOptions['stores']>;
  s3: S3StoreView;
}

/**
 * Builds fauxqs's stores ourselves, so the embedded S3 can answer what fauxqs answers wrongly from the same
 * objects (listing order: fauxqs sorts keys with `localeCompare` but pages them by code unit, so keys that
 * differ in case or punctuation are skipped or repeated across pages). fauxqs exports `buildApp`, which
 * takes stores, but not the store classes: they are loaded from its dist folder, and checked, so a fauxqs
 * release that moves them fails here, loudly, naming what changed, instead of listing wrongly.
 */
export async function createFauxqsStores(): Promise<FauxqsStores> {
  const packageJson = findPackageJSON('fauxqs', import.meta.url);
  if (packageJson === undefined) throw changed('its package.json cannot be found');
  const dist = new URL('dist/', pathToFileURL(packageJson));
  const load = async (path: string, name: string): Promise<new () => object> => {
    const module = (await import(new URL(path, dist).href).catch(() => ({}))) as Record<string, unknown>;
    const exported = module[name];
    if (typeof exported !== 'function') throw changed(`${path} no longer exports ${name}`);
    return exported as new () => object;
  };
  const [S3Store, SqsStore, SnsStore] = await Promise.all([
    load('s3/s3Store.js', 'S3Store'),
    load('sqs/sqsStore.js', 'SqsStore'),
    load('sns/snsStore.js', 'SnsStore'),
  ]);
  const s3Store = new S3Store();
  const buckets = (s3Store as { buckets?: unknown }).buckets;
  if (!(buckets instanceof Map)) throw changed('S3Store no longer keeps its objects in a `buckets` Map');
  if (typeof (s3Store as { deleteObject?: unknown }).deleteObject !== 'function')
    throw changed('S3Store no longer has deleteObject(bucket, key)');
  return {
    stores: { s3Store, sqsStore: new SqsStore(), snsStore: new SnsStore() } as FauxqsStores['stores'],
    s3: s3Store as unknown as S3StoreView,
  };
}

function changed(what: string): LocalStackError {
  return new LocalStackError(
    `the installed fauxqs does not have the internals the embedded S3 relies on (${what}); pin the fauxqs version in package.json`,
  );
}
