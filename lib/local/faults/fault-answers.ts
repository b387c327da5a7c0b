import { randomBytes } from 'node:crypto';
import type { AwsService } from './aws-call.js';

/** An error answer a service gives, as bytes on the wire. */
export interface WireAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The error answers the proxy can give in place of the service's own. */
export type ErrorAnswerKind = 'error' | 'throttle';

/**
 * What each service answers for a server error and for throttling, in its own protocol, so the SDK parses
 * it exactly as it parses the real thing (error `name` from the code, `$metadata.httpStatusCode`, `$fault`):
 *
 * | service | `error` | `throttle` |
 * |---|---|---|
 * | S3 (REST-XML) | 500 `InternalError` | 503 `SlowDown` |
 * | DynamoDB (JSON 1.0) | 500 `InternalServerError` | 400 `ProvisionedThroughputExceededException` (or `ThrottlingException`) |
 * | SQS (JSON 1.0) | 500 `InternalFailure` | 400 `RequestThrottled` (or `ThrottlingException`) |
 *
 * `code` overrides the default code of the kind (e.g. `ThrottlingException`).
 */
export function errorAnswer(service: AwsService, kind: ErrorAnswerKind, code?: string): WireAnswer {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  switch (service) {
    case 's3': {
      const [status, defaultCode, message] =
        kind === 'throttle'
          ? [503, 'SlowDown', 'Please reduce your request rate.']
          : [500, 'InternalError', 'We encountered an internal error. Please try again.'];
      const hostId = randomBytes(24).toString('base64');
      return {
        status,
        headers: {
          'content-type': 'application/xml',
          'x-amz-request-id': requestId,
          'x-amz-id-2': hostId,
        },
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code ?? defaultCode}</Code><Message>${message}</Message><RequestId>${requestId}</RequestId><HostId>${hostId}</HostId></Error>`,
      };
    }
    case 'dynamodb': {
      const [status, defaultCode, namespace, message] =
        kind === 'throttle'
          ? [
              400,
              'ProvisionedThroughputExceededException',
              'com.amazonaws.dynamodb.v20120810',
              'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
            ]
          : [500, 'InternalServerError', 'com.amazonaws.dynamodb.v20120810', 'Internal server error'];
      const chosen = code ?? defaultCode;
      // ThrottlingException is a Coral availability error, not a DynamoDB model one.
      const ns = chosen === 'ThrottlingException' ? 'com.amazon.coral.availability' : namespace;
      return {
        status,
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': requestId },
        body: JSON.stringify({ __type: `${ns}#${chosen}`, message }),
      };
    }
    case 'sqs': {
      const [status, defaultCode, fault, message] =
        kind === 'throttle'
          ? [400, 'RequestThrottled', 'Sender', 'The request was denied due to request throttling.']
          : [
              500,
              'InternalFailure',
              'Receiver',
              'The request processing has failed because of an unknown error, exception or failure.',
            ];
      const chosen = code ?? defaultCode;
      return {
        status,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amzn-requestid': requestId,
          // The JSON protocol still carries the query protocol's code for older clients.
          'x-amzn-query-error': `${chosen};${fault}`,
        },
        body: JSON.stringify({ __type: `com.amazonaws.sqs#${chosen}`, message }),
      };
    }
  }
}
