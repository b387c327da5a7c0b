import { S3IngestError } from '../../errors/index.js';

/** `dlq export` was given a file that exists: an earlier export may be the only copy of purged messages. */
export class ExportFileExistsError extends S3IngestError {
  override readonly name = 'ExportFileExistsError';

  constructor(readonly file: string) {
    super(`${file} exists; export to a new file (an earlier export may be the only copy of purged messages)`);
  }
}

/** `dlq import` was given a file that is not an export: names the line and what is wrong with it. */
export class ImportFileError extends S3IngestError {
  override readonly name = 'ImportFileError';
}
