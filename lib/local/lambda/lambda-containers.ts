import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';

/** A handler built once per container (module scope in Lambda), optionally with resources to release. */
export interface ContainerHandler {
  (event: SQSEvent, context: Context): Promise<SQSBatchResponse | undefined>;
  close?(): Promise<void>;
}

/**
 * Runs concurrent invocations the way Lambda does: each one in its own container, a container serving one
 * invocation at a time and reused warm afterwards. Module-level state (clients, tenant pools, per-invocation
 * metrics listeners) is therefore never shared by two invocations running at once, exactly as in AWS.
 */
export class LambdaContainers {
  readonly #idle: ContainerHandler[] = [];
  readonly #all: ContainerHandler[] = [];

  constructor(private readonly coldStart: () => ContainerHandler) {}

  /** Containers started so far (cold starts). */
  get size(): number {
    return this.#all.length;
  }

  readonly invoke = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse | undefined> => {
    let container = this.#idle.pop();
    if (container === undefined) {
      container = this.coldStart();
      this.#all.push(container);
    }
    try {
      return await container(event, context);
    } finally {
      this.#idle.push(container);
    }
  };

  async close(): Promise<void> {
    await Promise.all(this.#all.map((container) => container.close?.()));
  }
}
