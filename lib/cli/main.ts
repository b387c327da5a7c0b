#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type CliIo, EXIT } from './io.js';

export type { CliIo } from './io.js';

const HELP = `Usage: s3-ingest <command> [options]

Commands:
  local     run the whole pipeline locally with a demo load (npm start)
  send      send NDJSON writes to an ingestion queue
  inspect   count records in a bucket and messages in a queue and its DLQ
  dlq       peek at, redrive, export or import dead-lettered and rejected messages
  reshard   move a resource's records to another shard count, tenant by tenant

Run "s3-ingest <command> --help" for a command's options.`;

type Command = (argv: string[], io: CliIo) => Promise<number>;

// Each command is imported on use, so `send` and `inspect` never load the emulators.
const COMMANDS: Record<string, () => Promise<Command>> = {
  local: async () => (await import('./local.js')).localCommand,
  send: async () => (await import('./send.js')).sendCommand,
  inspect: async () => (await import('./inspect.js')).inspectCommand,
  dlq: async () => (await import('./dlq/command.js')).dlqCommand,
  reshard: async () => (await import('./reshard.js')).reshardCommand,
};

/**
 * The optional peer packages each command loads beyond the SQS client (package.json `peerDependencies`),
 * named when one is missing so a producer project learns what to install instead of reading a stack trace.
 */
const HANDLER_PEERS = [
  '@aws-sdk/client-s3',
  '@aws-sdk/client-dynamodb',
  '@smithy/node-http-handler',
  'ajv',
  'ajv-formats',
  're2js',
  'lru-cache',
  '@aws-lambda-powertools/logger',
  '@aws-lambda-powertools/metrics',
];
const PEERS: Record<string, readonly string[]> = {
  local: ['fauxqs', 'dynalite', ...HANDLER_PEERS],
  inspect: ['@aws-sdk/client-s3'],
  send: [],
  dlq: [],
  reshard: ['@aws-sdk/client-s3', '@smithy/node-http-handler'],
};

/** Runs the `s3-ingest` command line; resolves to the exit code. */
export async function main(
  argv: string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr, env: process.env },
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout).write(`${HELP}\n`);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const load = COMMANDS[name];
  if (load === undefined) {
    io.stderr.write(`s3-ingest: unknown command ${JSON.stringify(name)}\n\n${HELP}\n`);
    return EXIT.usage;
  }
  try {
    return await (await load())(rest, io);
  } catch (error) {
    const e = error as { name?: string; message?: string; code?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND' && (PEERS[name]?.length ?? 0) > 0) {
      const missing = /Cannot find package '([^']+)'/.exec(e.message ?? '')?.[1] ?? 'a package';
      io.stderr.write(
        `s3-ingest ${name}: ${missing} is not installed. This command needs the optional packages:\n` +
          `  npm install ${(PEERS[name] ?? []).join(' ')}\n`,
      );
      return EXIT.failure;
    }
    if (e.code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr.write(`s3-ingest ${name}: ${e.message}\n`);
      return EXIT.usage;
    }
    io.stderr.write(`s3-ingest ${name}: ${e.name ?? 'Error'}: ${e.message ?? String(error)}\n`);
    return EXIT.failure;
  }
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  process.exitCode = await main(process.argv.slice(2));
}
