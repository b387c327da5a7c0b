import { ConnectionStringError, InvalidKeyError } from './errors.js';
import { normalizePrefix } from './keys.js';

/** Where a Database keeps its objects, parsed from its connection string. */
export type ConnectionTarget =
  | {
      kind: 's3';
      bucket: string;
      /** Normalised key prefix (`''` or `seg/.../`), placed before `t=<tenant>/`. */
      prefix: string;
      /** Endpoint override (`http(s)://host:port`) for S3-compatible servers; absent for AWS. */
      endpoint?: string;
      credentials?: { accessKeyId: string; secretAccessKey: string };
      /** From `?region=`; otherwise the SDK's own resolution (env, profile). */
      region?: string;
    }
  | { kind: 'memory'; bucket: string; prefix: string };

/** S3's general-purpose bucket naming rules: 3..63 characters, lowercase letters, digits, `.` and `-`. */
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const IP_ADDRESS_PATTERN = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
/** Prefixes and suffixes S3 reserves (access points, Object Lambda, directory and table buckets, ...). */
const RESERVED_PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-'];
const RESERVED_SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'];

/**
 * Why `name` is not a valid S3 bucket name (AWS's rules for general purpose buckets), or `undefined` when it
 * is. Checked wherever a bucket name enters (connection strings, `BUCKET_NAME`), so a name S3 would refuse
 * fails at start, not at the first write.
 */
export function bucketNameProblem(name: string): string | undefined {
  if (!BUCKET_PATTERN.test(name)) {
    return 'must be 3..63 lowercase letters, digits, "." or "-", starting and ending with a letter or digit';
  }
  if (name.includes('..')) return 'must not contain two adjacent periods';
  if (IP_ADDRESS_PATTERN.test(name)) return 'must not be formatted as an IP address';
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix !== undefined) return `must not start with the reserved prefix "${prefix}"`;
  const suffix = RESERVED_SUFFIXES.find((s) => name.endsWith(s));
  if (suffix !== undefined) return `must not end with the reserved suffix "${suffix}"`;
  return undefined;
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConnectionStringError('credentials are not valid percent-encoding');
  }
}

/** The path as written: after `scheme://authority`, before `?` or `#` (`''` when there is none). */
/** The host as written (after any `user:pass@`, before the path, query or fragment). */
function rawHostOf(connectionString: string): string {
  const afterScheme = connectionString.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const authorityEnd = afterScheme.search(/[/?#]/);
  const authority = authorityEnd === -1 ? afterScheme : afterScheme.slice(0, authorityEnd);
  return authority.slice(authority.lastIndexOf('@') + 1);
}

function rawPathOf(connectionString: string): string {
  const afterScheme = connectionString.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const authorityEnd = afterScheme.search(/[/?#]/);
  if (authorityEnd === -1 || afterScheme[authorityEnd] !== '/') return '';
  const path = afterScheme.slice(authorityEnd);
  const pathEnd = path.search(/[?#]/);
  return pathEnd === -1 ? path : path.slice(0, pathEnd);
}

/**
 * Parses `s3://bucket/prefix` (AWS, default credential chain; `s3://key:secret@bucket/prefix` also
 * accepted), `http(s)://key:secret@host:port/bucket/prefix` (an S3-compatible endpoint, path-style) and
 * `memory://bucket/prefix` (in-process). `?region=` sets the region. Never echoes secrets in errors.
 */
export function parseConnectionString(connectionString: string): ConnectionTarget {
  if (typeof connectionString !== 'string' || connectionString === '') {
    throw new ConnectionStringError('must be a non-empty string');
  }
  // The URL parser silently drops tabs and newlines and trims spaces and control characters: refuse them, so
  // what it parses is what was written.
  if (!/^[\x21-\x7e]+$/.test(connectionString)) {
    throw new ConnectionStringError('must be printable ASCII without spaces (percent-encode credentials)');
  }
  const rawPath = rawPathOf(connectionString);
  // The URL parser resolves dot segments (`/a/../b` -> `/b`), also percent-encoded (`%2e%2e`) or
  // backslashed (`\..\`, http only), and percent-decoding the prefix would change it again. Bucket names
  // and prefixes never need either, so a path must be taken literally or not at all.
  if (/\/\.{1,2}(?=\/|$)/.test(rawPath)) {
    throw new ConnectionStringError('path must not contain "." or ".." segments');
  }
  if (/[%\\]|\/\//.test(rawPath)) {
    throw new ConnectionStringError('path must not contain percent-encoding, backslashes or empty segments');
  }
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw new ConnectionStringError('not a URL (expected s3://, http(s):// or memory://)');
  }
  const region = url.searchParams.get('region') ?? undefined;
  const credentials =
    url.username !== ''
      ? { accessKeyId: decode(url.username), secretAccessKey: decode(url.password) }
      : undefined;
  if (url.pathname !== rawPath && !(rawPath === '' && url.pathname === '/')) {
    // Anything else the parser would rewrite: the path must be exactly what was written.
    throw new ConnectionStringError('path changes under URL normalisation');
  }
  const path = url.pathname.replace(/^\/+/, '');

  const checkBucket = (bucket: string): string => {
    const problem = bucketNameProblem(bucket);
    if (problem !== undefined) {
      throw new ConnectionStringError(
        `bucket ${JSON.stringify(bucket)} is not a valid S3 bucket name: ${problem}`,
      );
    }
    return bucket;
  };
  const checkPrefix = (prefix: string): string => {
    try {
      return normalizePrefix(prefix);
    } catch (err) {
      if (err instanceof InvalidKeyError) throw new ConnectionStringError(err.message);
      throw err;
    }
  };

  switch (url.protocol) {
    case 's3:':
    case 'memory:': {
      // The bucket is the host exactly as written: `bucket:` or `bucket:443` would lose its port silently.
      if (rawHostOf(connectionString) !== url.hostname) {
        throw new ConnectionStringError('the bucket must be the whole host: no port, no other characters');
      }
      const bucket = checkBucket(url.hostname);
      const prefix = checkPrefix(path);
      if (url.protocol === 'memory:') return { kind: 'memory', bucket, prefix };
      return {
        kind: 's3',
        bucket,
        prefix,
        ...(credentials ? { credentials } : {}),
        ...(region ? { region } : {}),
      };
    }
    case 'http:':
    case 'https:': {
      const slash = path.indexOf('/');
      const bucket = checkBucket(slash === -1 ? path : path.slice(0, slash));
      const prefix = checkPrefix(slash === -1 ? '' : path.slice(slash + 1));
      return {
        kind: 's3',
        bucket,
        prefix,
        endpoint: `${url.protocol}//${url.host}`,
        ...(credentials ? { credentials } : {}),
        ...(region ? { region } : {}),
      };
    }
    default:
      throw new ConnectionStringError(
        `unsupported scheme ${JSON.stringify(url.protocol)} (expected s3://, http(s):// or memory://)`,
      );
  }
}
