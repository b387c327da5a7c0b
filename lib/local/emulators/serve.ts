// `npm run local`: one embedded AWS stack in the foreground, provisioned, for the AWS CLI or SDK by hand.

import { S3BehaviourModel } from '../s3-behaviour/s3-behaviour-model.js';
import { startLocalAws } from './local-aws.js';
import { provisionLocal } from './provision.js';
import { parseServeArgs, SERVE_USAGE } from './serve-args.js';

async function main(): Promise<void> {
  let options: ReturnType<typeof parseServeArgs>;
  try {
    options = parseServeArgs(process.argv.slice(2));
    // Build the model up front so bad chaos values fail here, with the flag named, before anything starts.
    if (options.chaos !== undefined) new S3BehaviourModel(options.chaos);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${SERVE_USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (options.help) {
    process.stdout.write(SERVE_USAGE);
    return;
  }

  const aws = await startLocalAws({ port: options.port, ...(options.chaos ? { chaos: options.chaos } : {}) });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (aws.chaos !== undefined) {
      process.stdout.write(`\nchaos proxy counters: ${JSON.stringify(aws.chaos.model.stats().total)}\n`);
    }
    await aws.stop();
    process.stdout.write(`stopped (${signal})\n`);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  const resources = await provisionLocal({
    // Provision the emulators directly: the chaos proxy could throttle or fault the setup itself.
    endpoints: aws.emulatorEndpoints,
    ...(options.bucket ? { bucket: options.bucket } : {}),
    ...(options.queueName ? { queueName: options.queueName } : {}),
    ...(options.tableName ? { tableName: options.tableName } : {}),
  });
  const { endpoints } = aws;
  const lines = [
    'local AWS is running (Ctrl-C to stop)',
    `  S3        ${endpoints.s3}${aws.chaos ? `  (chaos proxy; emulator at ${aws.emulatorEndpoints.s3})` : ''}`,
    `  SQS       ${endpoints.sqs}`,
    `  DynamoDB  ${endpoints.dynamodb}`,
    `  bucket ${resources.bucket}  queue ${resources.queueUrl}  dlq ${resources.dlqUrl}  table ${resources.tableName}`,
    '',
    '# paste into a shell (S3 needs path-style: aws configure set default.s3.addressing_style path)',
    `export AWS_ENDPOINT_URL_S3=${endpoints.s3}`,
    `export AWS_ENDPOINT_URL_SQS=${endpoints.sqs}`,
    `export AWS_ENDPOINT_URL_DYNAMODB=${endpoints.dynamodb}`,
    'export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test',
    `export BUCKET_NAME=${resources.bucket} QUEUE_URL=${resources.queueUrl} DLQ_URL=${resources.dlqUrl} SEMAPHORE_TABLE=${resources.tableName}`,
    '',
  ];
  if (aws.chaos !== undefined) lines.splice(1, 0, `  chaos     ${JSON.stringify(options.chaos)}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
