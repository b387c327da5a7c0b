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

/** S3's bucket naming rules (the subset that matters for path-style addressing). */
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConnectionStringError('credentials are not valid percent-encoding');
  }
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
  // The URL parser silently resolves dot segments (`/a/../b` -> `/b`); refuse them instead.
  if (/\/\.{1,2}(?=\/|\?|#|$)/.test(connectionString.replace(/^[a-z0-9+.-]+:\/\//i, '/'))) {
    throw new ConnectionStringError('path must not contain "." or ".." segments');
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
  const path = url.pathname.replace(/^\/+/, '');

  const checkBucket = (bucket: string): string => {
    if (!BUCKET_PATTERN.test(bucket)) {
      throw new ConnectionStringError(`bucket ${JSON.stringify(bucket)} is not a valid S3 bucket name`);
    }
    return bucket;
  };
  const checkPrefix = (prefix: string): string => {
    try {
      return normalizePrefix(decodeURIComponent(prefix));
    } catch (err) {
      if (err instanceof InvalidKeyError) throw new ConnectionStringError(err.message);
      throw new ConnectionStringError('prefix is not valid percent-encoding');
    }
  };

  switch (url.protocol) {
    case 's3:':
    case 'memory:': {
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
