import { type CliIo, EXIT } from '../io.js';
import { dlqExportCommand } from './export.js';
import { dlqImportCommand } from './import.js';
import { dlqPeekCommand } from './peek.js';
import { dlqRedriveCommand } from './redrive.js';

export const DLQ_HELP = `Usage: s3-ingest dlq <peek|redrive|export|import> [options]

Dead-letter tooling, for the dead-letter queue (valid messages SQS moved after maxReceiveCount) and the
rejected queue (messages the function refused, with a reason attribute). See docs/runbooks.md.

  peek      show messages (reason, error, tenant, first bytes of the body) without deleting them
  redrive   move messages back to the queue each came from (never contract rejections unless asked)
  export    write messages to an NDJSON file, then optionally delete them (--purge)
  import    send the messages of an export file back to the queue they came from

Run "s3-ingest dlq <subcommand> --help" for its options. AWS settings follow the SDK (default
credential chain, AWS_REGION, AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_SQS).`;

const SUBCOMMANDS: Record<string, (argv: string[], io: CliIo) => Promise<number>> = {
  peek: dlqPeekCommand,
  redrive: dlqRedriveCommand,
  export: dlqExportCommand,
  import: dlqImportCommand,
};

/** `s3-ingest dlq <subcommand>`. */
export async function dlqCommand(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${DLQ_HELP}\n`);
    return EXIT.ok;
  }
  const run = name === undefined ? undefined : SUBCOMMANDS[name];
  if (run === undefined) {
    io.stderr.write(
      `${name === undefined ? '' : `s3-ingest dlq: unknown subcommand ${JSON.stringify(name)}\n\n`}${DLQ_HELP}\n`,
    );
    return EXIT.usage;
  }
  return run(rest, io);
}
