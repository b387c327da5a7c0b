import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { type DeadLetterView, viewOf } from './dead-letter.js';
import { ImportFileError } from './errors.js';
import { type LetterOrigin, originOf } from './origin.js';

/** A message attribute as an export line keeps it: its data type and its value (binary in base64). */
export type ExportedAttribute =
  | { readonly dataType: string; readonly stringValue: string }
  | { readonly dataType: string; readonly binaryValue: string };

/**
 * One line of `dlq export`: what peek shows, the letter's origin, every message attribute with its data
 * type (binary values in base64) and SQS's system attributes: enough for `dlq import` to send it back as
 * `redrive` would have.
 */
export interface ExportLine extends DeadLetterView {
  readonly origin: LetterOrigin;
  readonly attributes: Record<string, ExportedAttribute>;
  readonly systemAttributes: Record<string, string>;
}

function exported(a: MessageAttributeValue): ExportedAttribute {
  const dataType = a.DataType ?? 'String';
  return a.BinaryValue !== undefined
    ? { dataType, binaryValue: Buffer.from(a.BinaryValue).toString('base64') }
    : { dataType, stringValue: a.StringValue ?? '' };
}

/** The export line of `m`, as text (JSON and a newline). */
export function exportLineOf(m: Message): string {
  const line: ExportLine = {
    ...viewOf(m),
    origin: originOf(m),
    attributes: Object.fromEntries(
      Object.entries(m.MessageAttributes ?? {}).map(([n, a]) => [n, exported(a)]),
    ),
    systemAttributes: { ...m.Attributes },
  };
  return `${JSON.stringify(line)}\n`;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function attributeOf(value: unknown, where: string): MessageAttributeValue {
  if (!isRecord(value) || typeof value.dataType !== 'string')
    throw new ImportFileError(`${where}: an attribute needs a dataType`);
  if (typeof value.binaryValue === 'string')
    return { DataType: value.dataType, BinaryValue: Buffer.from(value.binaryValue, 'base64') };
  if (typeof value.stringValue === 'string')
    return { DataType: value.dataType, StringValue: value.stringValue };
  throw new ImportFileError(`${where}: an attribute needs a stringValue or a binaryValue`);
}

/** The message an export line was written from (`where` names the line in errors). */
export function messageOfLine(text: string, where: string): Message {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ImportFileError(`${where}: not JSON`);
  }
  if (!isRecord(parsed) || typeof parsed.messageId !== 'string' || typeof parsed.body !== 'string')
    throw new ImportFileError(`${where}: not an export line (messageId and body are required)`);
  const attributes = isRecord(parsed.attributes) ? parsed.attributes : {};
  const system = isRecord(parsed.systemAttributes) ? parsed.systemAttributes : {};
  return {
    MessageId: parsed.messageId,
    Body: parsed.body,
    MessageAttributes: Object.fromEntries(
      Object.entries(attributes).map(([name, value]) => [name, attributeOf(value, `${where}: ${name}`)]),
    ),
    Attributes: Object.fromEntries(Object.entries(system).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >,
  };
}
