// What every forked worker process starts with: its config from argv, a way to message the test, and a
// DynamoDB client on the test's endpoint.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** The config the test passed to `startWorker` (argv[2], JSON). */
export const workerConfig = <C>(): C => JSON.parse(process.argv[2] ?? '{}') as C;

/** Sends `message` to the test over fork IPC; resolves once it is handed over. */
export const sendToTest = (message: object) =>
  new Promise<void>((resolve) => process.send!(message, () => resolve()));

/** A DynamoDB client on the test's dynalite. */
export const workerClient = (endpoint: string) =>
  new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
