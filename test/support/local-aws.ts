import { inject } from 'vitest';
import type { LocalAwsEndpoints } from '../../lib/local/emulators/local-aws.js';

export type { LocalAwsEndpoints };

declare module 'vitest' {
  export interface ProvidedContext {
    localAws: LocalAwsEndpoints;
    /** `embedded`: the in-process emulators; `external`: endpoints from `AWS_ENDPOINT_URL*` (LocalStack, AWS). */
    localAwsTarget: 'embedded' | 'external';
  }
}

/** Endpoints of the stack started by test/global-setup.ts, shared by every test file in the run. */
export function localAwsEndpoints(): LocalAwsEndpoints {
  return inject('localAws');
}

/** True when the run targets the embedded emulators (false under `npm run test:localstack`). */
export function usingEmbeddedAws(): boolean {
  return inject('localAwsTarget') === 'embedded';
}

/**
 * Client settings for SDK v3 clients pointed at the run's endpoints: region us-east-1 (or `AWS_REGION` on an
 * external target), path-style for S3, test credentials (unless an external run has its own in the
 * environment, which the SDK then picks up).
 */
export function localClientConfig(service: keyof LocalAwsEndpoints) {
  const external = !usingEmbeddedAws();
  const ownCredentials = external && process.env.AWS_ACCESS_KEY_ID !== undefined;
  return {
    endpoint: localAwsEndpoints()[service],
    region: (external ? process.env.AWS_REGION : undefined) ?? 'us-east-1',
    ...(ownCredentials ? {} : { credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }),
    ...(service === 's3' ? { forcePathStyle: true } : {}),
  };
}

/** `localClientConfig` for all three services at once, shaped like `LocalAws.clientConfig`. */
export function localClientConfigs() {
  return {
    s3: { ...localClientConfig('s3'), forcePathStyle: true as const },
    sqs: localClientConfig('sqs'),
    dynamodb: localClientConfig('dynamodb'),
  };
}
