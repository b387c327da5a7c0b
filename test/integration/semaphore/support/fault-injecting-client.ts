import {
  type DynamoDBClient,
  DynamoDBServiceException,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';

/** One request a budget sent: the command's class name (`UpdateItemCommand`, ...) and its input. */
export interface DynamoCall {
  readonly command: string;
  readonly input: {
    readonly UpdateExpression?: string;
    readonly ConditionExpression?: string;
    readonly Key?: { readonly sk?: { readonly S?: string } };
  };
  /** `performance.now()` when the request was sent. */
  readonly sentAt: number;
}

export interface Faults {
  /** Runs (and is awaited) before a request is sent; throwing fails the request with that error, unsent. */
  before?: (call: DynamoCall) => void | Promise<void>;
  /** Runs once a request has been answered, before the caller sees the answer (e.g. to abort a signal then). */
  after?: (call: DynamoCall) => void;
}

/**
 * A DynamoDB client that forwards every request to `inner` (dynalite) and lets a test fail chosen requests
 * before they are sent, or act right after they are answered. `calls` records every request in order.
 */
export function faultInjecting(
  inner: DynamoDBClient,
  faults: Faults = {},
): {
  client: DynamoDBClient;
  calls: DynamoCall[];
} {
  const calls: DynamoCall[] = [];
  const client = {
    async send(command: { constructor: { name: string }; input: DynamoCall['input'] }, options?: object) {
      const call: DynamoCall = {
        command: command.constructor.name,
        input: command.input,
        sentAt: performance.now(),
      };
      calls.push(call);
      await faults.before?.(call);
      const answer = await (inner.send as (c: unknown, o?: object) => Promise<unknown>)(command, options);
      faults.after?.(call);
      return answer;
    },
  };
  return { client: client as unknown as DynamoDBClient, calls };
}

/** What DynamoDB answers a request over its throughput (retryable, never "condition failed"). */
export const throttled = () =>
  new ProvisionedThroughputExceededException({
    message: 'Rate of requests exceeds the allowed throughput',
    $metadata: {},
  });

/** What DynamoDB answers a malformed request (permanent, never "condition failed"). */
export const refused = () =>
  new DynamoDBServiceException({
    name: 'ValidationException',
    $fault: 'client',
    message: 'Invalid UpdateExpression',
    $metadata: { httpStatusCode: 400 },
  });
