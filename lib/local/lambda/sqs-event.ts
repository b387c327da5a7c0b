import { randomUUID } from 'node:crypto';
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { Context, SQSMessageAttribute, SQSMessageAttributes, SQSRecord } from 'aws-lambda';

/** Where the records come from, as Lambda stamps it on every record. */
export interface EventSource {
  eventSourceARN: string;
  awsRegion: string;
}

function toBase64(bytes: Uint8Array | undefined): string | undefined {
  return bytes === undefined ? undefined : Buffer.from(bytes).toString('base64');
}

// Lambda hands attributes over in camelCase with binary values base64-encoded, and always includes the
// (reserved, unused) list fields as empty arrays.
function toLambdaAttribute(value: MessageAttributeValue): SQSMessageAttribute {
  const attribute: SQSMessageAttribute = {
    stringListValues: value.StringListValues ?? [],
    binaryListValues: (value.BinaryListValues ?? []).map((b) => toBase64(b) ?? ''),
    dataType: value.DataType ?? 'String',
  };
  if (value.StringValue !== undefined) attribute.stringValue = value.StringValue;
  const binary = toBase64(value.BinaryValue);
  if (binary !== undefined) attribute.binaryValue = binary;
  return attribute;
}

/** Maps one received SQS message to the record shape Lambda delivers (`SQSEvent.Records[n]`). */
export function toSqsRecord(message: Message, source: EventSource): SQSRecord {
  const attributes = message.Attributes ?? {};
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = toLambdaAttribute(value);
  }
  const record: SQSRecord = {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? '',
      SenderId: attributes.SenderId ?? '',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? '',
      ...(attributes.SequenceNumber === undefined ? {} : { SequenceNumber: attributes.SequenceNumber }),
      ...(attributes.MessageGroupId === undefined ? {} : { MessageGroupId: attributes.MessageGroupId }),
      ...(attributes.MessageDeduplicationId === undefined
        ? {}
        : { MessageDeduplicationId: attributes.MessageDeduplicationId }),
      ...(attributes.AWSTraceHeader === undefined ? {} : { AWSTraceHeader: attributes.AWSTraceHeader }),
    },
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: source.eventSourceARN,
    awsRegion: source.awsRegion,
  };
  if (message.MD5OfMessageAttributes !== undefined)
    record.md5OfMessageAttributes = message.MD5OfMessageAttributes;
  return record;
}

/** What a local invocation context is built from. */
export interface ContextSettings {
  functionName: string;
  memoryLimitInMB: number;
  region: string;
  /** Epoch milliseconds at which the invocation times out. */
  deadline: number;
}

function unsupported(name: string): never {
  throw new Error(`context.${name}() is a Node 0.10-era callback API; return (or reject) a promise instead`);
}

/** A Lambda `Context` whose `getRemainingTimeInMillis()` counts down to the invocation's real deadline. */
export function createLambdaContext(settings: ContextSettings): Context {
  const { functionName, region, deadline } = settings;
  const requestId = randomUUID();
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(settings.memoryLimitInMB),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `${day}/[$LATEST]${requestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => unsupported('done'),
    fail: () => unsupported('fail'),
    succeed: () => unsupported('succeed'),
  };
}
