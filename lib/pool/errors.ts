import { S3IngestError } from '../errors/index.js';

// Named `Task...` so they cannot be confused with the platform's DOMException `TimeoutError`/`AbortError`
// (AbortSignal.timeout(), fetch, the AWS SDK's own aborts): a `name` check or a log line says whose it is.

/** An attempt ran past its `timeout`. Its signal was aborted; its slot stays held until the work settles. */
export class TaskTimeoutError extends S3IngestError {
  override readonly name = 'TaskTimeoutError';
  constructor(
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`task attempt timed out after ${timeoutMs} ms`, options);
  }
}

/** The caller's `signal` aborted the task (queued, backing off or running). `cause` is the signal's reason. */
export class TaskAbortedError extends S3IngestError {
  override readonly name = 'TaskAbortedError';
  constructor(message = 'task aborted', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The pool was stopped: queued tasks reject with it, in-flight callers too, and so does any later `enqueue`. */
export class PoolStoppedError extends S3IngestError {
  override readonly name = 'PoolStoppedError';
  constructor(message = 'executor pool stopped') {
    super(message);
  }
}

/** `enqueue` found `maxQueueSize` tasks already waiting. Nothing was queued. */
export class QueueFullError extends S3IngestError {
  override readonly name = 'QueueFullError';
  constructor(readonly maxQueueSize: number) {
    super(`executor pool queue is full (maxQueueSize ${maxQueueSize})`);
  }
}

/** The circuit breaker is open (or half-open with its probes taken): the task was refused without running. */
export class CircuitOpenError extends S3IngestError {
  override readonly name = 'CircuitOpenError';
  constructor(readonly retryAfterMs: number) {
    super(`circuit breaker open; retry in about ${Math.ceil(retryAfterMs)} ms`);
  }
}

/**
 * The pool's own cut-offs and refusals (timeout, abort, stop, full queue, open breaker): the work itself
 * did not fail, so trying it again later may succeed (SQS redelivery, or the pool's retry of a timeout).
 */
export function isPoolCutOff(error: unknown): boolean {
  return (
    error instanceof TaskTimeoutError ||
    error instanceof TaskAbortedError ||
    error instanceof PoolStoppedError ||
    error instanceof QueueFullError ||
    error instanceof CircuitOpenError
  );
}
