import type { S3Client } from '@aws-sdk/client-s3';

/** Counts S3 HTTP attempts in flight across every client it is attached to (backoff sleeps not included). */
export class InFlightCounter {
  current = 0;
  peak = 0;
  attempts = 0;
  /** PutObject/DeleteObject attempts (what the per-prefix write limit counts). */
  writeAttempts = 0;

  /**
   * The deserialize step runs once per attempt, inside the SDK's retry loop (finalizeRequest), so a request
   * waiting out its backoff is not counted as in flight.
   */
  attach(client: S3Client): S3Client {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        this.current += 1;
        this.attempts += 1;
        if (context.commandName === 'PutObjectCommand' || context.commandName === 'DeleteObjectCommand')
          this.writeAttempts += 1;
        if (this.current > this.peak) this.peak = this.current;
        try {
          return await next(args);
        } finally {
          this.current -= 1;
        }
      },
      { step: 'deserialize', name: 'benchInFlightCounter' },
    );
    return client;
  }
}
