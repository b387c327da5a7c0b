import { inject } from 'vitest';
import type { BackendEndpoints } from '../../../scripts/backends/backends.js';

export type { BackendEndpoints };

declare module 'vitest' {
  export interface ProvidedContext {
    /** The real servers test/backends/global-setup.ts started for this run. */
    backends: BackendEndpoints;
  }
}

/** Endpoints of the Ceph RGW and DynamoDB Local of this run. */
export function backendEndpoints(): BackendEndpoints {
  return inject('backends');
}
