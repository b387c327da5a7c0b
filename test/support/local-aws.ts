import { inject } from 'vitest';

export interface LocalAwsEndpoints {
  s3: string;
  sqs: string;
  dynamodb: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    localAws: LocalAwsEndpoints;
  }
}

/** Endpoints of the stack started by test/global-setup.ts, shared by every test file in the run. */
export function localAwsEndpoints(): LocalAwsEndpoints {
  return inject('localAws');
}

/** Client settings for SDK v3 clients pointed at the embedded emulators (any credentials work). */
export function localClientConfig(service: keyof LocalAwsEndpoints) {
  return {
    endpoint: localAwsEndpoints()[service],
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    ...(service === 's3' ? { forcePathStyle: true } : {}),
  };
}
