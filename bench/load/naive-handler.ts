// The baseline the load benchmark compares against: what a handler written without this library looks like.
// Same message contract and key layout, but every record of the batch goes to S3 at once (Promise.all), one
// default S3 client (SDK retries only: maxAttempts 3, standard mode), no pools, no fleet cap, no DLQ.
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { recordKey } from '../../lib/db/keys.js';
import { parseIngestMessage } from '../../lib/ingest/message/parse.js';
import type { ResourceNames } from '../../lib/ingest/message/types.js';

export interface NaiveHandlerOptions {
  s3: S3Client;
  bucket: string;
  resources: ResourceNames;
}

export interface NaiveHandler {
  (event: SQSEvent): Promise<SQSBatchResponse>;
  close(): Promise<void>;
}

export function createNaiveHandler(options: NaiveHandlerOptions): NaiveHandler {
  const { s3, bucket, resources } = options;
  const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const results = await Promise.allSettled(
      event.Records.map(async (record) => {
        const write = parseIngestMessage(record.body, { messageId: record.messageId, resources });
        const Key = recordKey(write.tenant, write.resource, write.id);
        if (write.op === 'delete') {
          await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key }));
          return;
        }
        // A naive handler does not read before an update: every write is a blind overwrite.
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key,
            Body: JSON.stringify({ ...write.data, id: write.id }),
            ContentType: 'application/json',
          }),
        );
      }),
    );
    const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
    results.forEach((result, i) => {
      if (result.status === 'rejected')
        batchItemFailures.push({ itemIdentifier: event.Records[i]!.messageId });
    });
    return { batchItemFailures };
  };
  return Object.assign(handler, {
    close: async () => {
      s3.destroy();
    },
  });
}
