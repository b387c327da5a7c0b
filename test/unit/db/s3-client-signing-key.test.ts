// `reuseSigningKey` (applied by createS3Client's reused signer) must sign every request exactly as the SDK's
// own signer does, whatever changes between requests: the day, the credentials, the region, the service.
import { S3Client } from '@aws-sdk/client-s3';
import { HttpRequest } from '@smithy/core/protocols';
import { describe, expect, it, vi } from 'vitest';
import { reuseRequestSigner, reuseSigningKey } from '../../../lib/db/s3-client-trims.js';

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

interface Signer {
  sign(request: HttpRequest, options: Record<string, unknown>): Promise<HttpRequest>;
}

/** Two clients reading the same (changeable) credentials: one with the reused signer and key, one as the SDK builds it. */
async function signers(credentials: { current: Credentials }) {
  const options = {
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    forcePathStyle: true,
    // Expiring within the SDK's refresh window: the SDK asks for them again on every request.
    credentials: async () => ({ ...credentials.current, expiration: new Date(Date.now() + 60_000) }),
  };
  const trimmed = new S3Client(options);
  reuseRequestSigner(trimmed);
  const sdk = new S3Client(options);
  return {
    ours: (await trimmed.config.signer()) as unknown as Signer,
    // The SDK builds a fresh signer per call: one per signature here too.
    sdk: async () => (await sdk.config.signer()) as unknown as Signer,
  };
}

function request(key: string): HttpRequest {
  return new HttpRequest({
    method: 'PUT',
    protocol: 'http:',
    hostname: '127.0.0.1',
    port: 9,
    path: `/bucket/${key}`,
    headers: { host: '127.0.0.1:9', 'content-type': 'application/json' },
    body: `{"k":"${key}"}`,
  });
}

async function authorization(
  signer: Signer,
  key: string,
  options: Record<string, unknown>,
): Promise<string | undefined> {
  const signed = await signer.sign(request(key), options);
  return signed.headers.authorization;
}

describe('reuseSigningKey', () => {
  it('signs like the SDK across days, credentials, session tokens, regions and services', async () => {
    const credentials = { current: { accessKeyId: 'AK1', secretAccessKey: 'SK1' } as Credentials };
    const { ours, sdk } = await signers(credentials);
    const day1 = new Date('2026-11-30T23:59:59Z');
    const day2 = new Date('2026-12-01T00:00:01Z');
    const cases: [string, () => void, Record<string, unknown>][] = [
      ['first request', () => {}, { signingDate: day1 }],
      ['same inputs again (the kept key)', () => {}, { signingDate: day1 }],
      ['the next day', () => {}, { signingDate: day2 }],
      ['back to the day before', () => {}, { signingDate: day1 }],
      [
        'refreshed secret, same key id',
        () => {
          credentials.current = { accessKeyId: 'AK1', secretAccessKey: 'SK2' };
        },
        { signingDate: day1 },
      ],
      [
        'a session token',
        () => {
          credentials.current = { accessKeyId: 'AK1', secretAccessKey: 'SK2', sessionToken: 'T1' };
        },
        { signingDate: day2 },
      ],
      [
        'another key id',
        () => {
          credentials.current = { accessKeyId: 'AK2', secretAccessKey: 'SK2', sessionToken: 'T1' };
        },
        { signingDate: day2 },
      ],
      ['another region', () => {}, { signingDate: day2, signingRegion: 'eu-west-1' }],
      [
        'another service',
        () => {},
        { signingDate: day2, signingRegion: 'eu-west-1', signingService: 's3-object-lambda' },
      ],
    ];
    const seen = new Set<string>();
    for (const [what, change, options] of cases) {
      change();
      const expected = await authorization(await sdk(), what.length.toString(), options);
      expect(await authorization(ours, what.length.toString(), options), what).toBe(expected);
      expect(expected).toMatch(/^AWS4-HMAC-SHA256 /);
      seen.add(expected ?? '');
    }
    // The cases really differ (a kept key for the wrong inputs would have been caught above).
    expect(seen.size).toBeGreaterThan(5);
  });

  it('derives a key once while its inputs stay the same', async () => {
    const credentials = { current: { accessKeyId: 'AK', secretAccessKey: 'SK' } as Credentials };
    // The SDK's SignatureV4 prototype, spied on before our signer wraps its method.
    const probe = (await new S3Client({ region: 'us-east-1' }).config.signer()) as unknown as {
      sigv4Signer: object;
    };
    const derive = vi.spyOn(Object.getPrototypeOf(Object.getPrototypeOf(probe.sigv4Signer)), 'getSigningKey');
    const { ours } = await signers(credentials);
    try {
      const signingDate = new Date('2026-11-30T12:00:00Z');
      for (let i = 0; i < 5; i++) await authorization(ours, `k${i}`, { signingDate });
      expect(derive).toHaveBeenCalledTimes(1);
      await authorization(ours, 'k', { signingDate: new Date('2026-12-01T12:00:00Z') });
      expect(derive).toHaveBeenCalledTimes(2);
    } finally {
      derive.mockRestore();
    }
  });

  it('does not keep a failed derivation: the next request derives again', async () => {
    const key = new Uint8Array([1, 2, 3]);
    const failure = new Error('no key');
    const getSigningKey = vi.fn().mockRejectedValueOnce(failure).mockResolvedValue(key);
    const signer = { getSigningKey };
    reuseSigningKey(signer);
    const credentials = { accessKeyId: 'AK', secretAccessKey: 'SK' };
    await expect(signer.getSigningKey(credentials, 'r', '20261130', 's3')).rejects.toBe(failure);
    // Let the failure's handler run before the next call.
    await Promise.resolve();
    expect(await signer.getSigningKey(credentials, 'r', '20261130', 's3')).toBe(key);
    expect(await signer.getSigningKey(credentials, 'r', '20261130', 's3')).toBe(key);
    expect(getSigningKey).toHaveBeenCalledTimes(2);
  });

  it('leaves a signer without getSigningKey as it is', () => {
    const signer = { sign: () => undefined };
    reuseSigningKey(signer);
    reuseSigningKey(undefined);
    expect(Object.keys(signer)).toEqual(['sign']);
  });
});
