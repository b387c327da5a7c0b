import { S3IngestError } from '../../errors/index.js';

/** `EventSourceRunner.waitForIdle()` / `until()` gave up before the condition held. */
export class EventSourceRunnerTimeoutError extends S3IngestError {
  override readonly name = 'EventSourceRunnerTimeoutError';

  constructor(
    /** What was awaited, e.g. `idle`. */
    readonly condition: string,
    readonly timeoutMs: number,
  ) {
    super(`event source runner: ${condition} not reached within ${timeoutMs} ms`);
  }
}
