import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { SQS_LIMITS } from '../../../aws/sqs-limits.js';
import {
  DEFERRAL_ATTRIBUTES,
  type Deferral,
  type DeferralPort,
  deferralsOf,
  originOf,
  originSentOf,
} from './deferral-port.js';
import { queueUrlOf } from './redelivery-backoff.js';
import { type OutgoingAttribute, type OutgoingMessage, sendMessageBatches } from './send-message-batches.js';

/** `seconds` as SQS takes it: a whole number of seconds, 0..900 (rounded up: never visible earlier than asked). */
export function clampDelaySeconds(seconds: number): number {
  if (Number.isNaN(seconds)) return 0;
  return Math.min(SQS_LIMITS.maxDelaySeconds, Math.max(0, Math.ceil(seconds)));
}

/**
 * A record's attributes as the SDK sends them, from Lambda's event format (`stringValue`, `binaryValue` in
 * base64, `dataType`, which may carry a custom suffix such as `Number.int` or `Binary.gzip`). Undefined
 * when one has no value for its type (SQS would refuse the entry).
 */
function sdkAttributesOf(
  attributes: SQSMessageAttributes | undefined,
): Record<string, OutgoingAttribute> | undefined {
  const converted: Record<string, OutgoingAttribute> = {};
  for (const [name, attribute] of Object.entries(attributes ?? {})) {
    const { dataType, stringValue, binaryValue } = attribute;
    if (dataType.startsWith('Binary')) {
      if (binaryValue === undefined) return undefined;
      converted[name] = { DataType: dataType, BinaryValue: Buffer.from(binaryValue, 'base64') };
    } else {
      if (stringValue === undefined) return undefined;
      converted[name] = { DataType: dataType, StringValue: stringValue };
    }
  }
  return converted;
}

/**
 * The copy of `record` to send, or undefined when it cannot be one: an empty body (SQS cannot carry it),
 * an attribute without its value, or more than 10 attributes once origin, its sent time and count are added.
 */
function copyOf(record: SQSRecord, delaySeconds: number): OutgoingMessage['entry'] | undefined {
  if (record.body === '') return undefined;
  const own = sdkAttributesOf(record.messageAttributes);
  if (own === undefined) return undefined;
  const attributes: Record<string, OutgoingAttribute> = {
    // Spread first: whatever the producer set under our two names is replaced, never counted twice.
    ...own,
    [DEFERRAL_ATTRIBUTES.origin]: { DataType: 'String', StringValue: originOf(record) },
    [DEFERRAL_ATTRIBUTES.deferrals]: { DataType: 'Number', StringValue: String(deferralsOf(record) + 1) },
  };
  // The origin's SentTimestamp stands in for the `seq` of a message without one: the copy orders as it did.
  const sent = Number(originSentOf(record));
  if (Number.isSafeInteger(sent) && sent > 0)
    attributes[DEFERRAL_ATTRIBUTES.originSent] = { DataType: 'Number', StringValue: String(sent) };
  else delete attributes[DEFERRAL_ATTRIBUTES.originSent];
  if (Object.keys(attributes).length > SQS_LIMITS.messageAttributes) return undefined;
  return {
    MessageBody: record.body,
    MessageAttributes: attributes,
    DelaySeconds: clampDelaySeconds(delaySeconds),
  };
}

/** Where and what to send for `deferral`, or undefined when its record cannot be deferred. */
function outgoingOf({
  record,
  delaySeconds,
}: Deferral): { queueUrl: string; message: OutgoingMessage } | undefined {
  // FIFO: SQS refuses a per-message DelaySeconds there, and a copy would leave its group's order.
  if (record.eventSourceARN.endsWith('.fifo')) return undefined;
  const queueUrl = queueUrlOf(record.eventSourceARN);
  if (queueUrl === undefined) return undefined;
  const entry = copyOf(record, delaySeconds);
  return entry === undefined ? undefined : { queueUrl, message: { key: record.messageId, entry } };
}

/**
 * Defers records by re-sending each to its own source queue as a new message (receive count 1), visible
 * after the deferral's `DelaySeconds` (clamped to 0..900): `SendMessageBatch` per queue, at most 10
 * entries and 250 KiB per request, every request carrying the caller's signal. The copy's body is the
 * record's, verbatim; its attributes are the record's own plus `DEFERRAL_ATTRIBUTES.origin` (the message id its data
 * is keyed by, `originOf`), `DEFERRAL_ATTRIBUTES.originSent` (the origin's `SentTimestamp`, `originSentOf`) and `DEFERRAL_ATTRIBUTES.deferrals` (`deferralsOf` + 1), replacing any the producer set
 * under those names.
 *
 * Resolves the message ids NOT deferred, which the handler must redeliver: records from a FIFO queue
 * (per-message delays are invalid there, and a copy would leave its group's order), from an ARN that names
 * no queue, with an empty body, with more than 10 attributes once the two are added; entries SQS listed in
 * `Failed` or in neither list; entries of a request that failed, or that the signal aborted or kept from
 * starting. Never rejects.
 *
 * The function's role needs `sqs:SendMessage` on every ingest queue (infra/ingest-stack.ts grants it).
 */
export class SqsDeferrals implements DeferralPort {
  constructor(private readonly sqs: SQSClient) {}

  takes(record: SQSRecord): boolean {
    return outgoingOf({ record, delaySeconds: 0 }) !== undefined;
  }

  async defer(
    deferrals: readonly Deferral[],
    options: { signal: AbortSignal },
  ): Promise<ReadonlySet<string>> {
    const notDeferred = new Set<string>();
    const byQueue = new Map<string, OutgoingMessage[]>();
    for (const deferral of deferrals) {
      const outgoing = outgoingOf(deferral);
      if (outgoing === undefined) {
        notDeferred.add(deferral.record.messageId);
        continue;
      }
      const queued = byQueue.get(outgoing.queueUrl) ?? [];
      queued.push(outgoing.message);
      byQueue.set(outgoing.queueUrl, queued);
    }
    const unsent = await Promise.all(
      [...byQueue].map(([queueUrl, messages]) =>
        sendMessageBatches(this.sqs, queueUrl, messages, options.signal),
      ),
    );
    for (const ids of unsent) for (const id of ids) notDeferred.add(id);
    return notDeferred;
  }
}
