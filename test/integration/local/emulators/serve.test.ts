import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';

let child: ChildProcess | undefined;
afterEach(() => {
  if (child?.exitCode === null) child.kill('SIGKILL');
});

/** Resolves with the output so far once `pattern` appears in the child's stdout. */
function waitForOutput(proc: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) {
        proc.stdout!.off('data', onData);
        resolve(output);
      }
    };
    proc.stdout!.on('data', onData);
    proc.once('exit', (code) =>
      reject(new Error(`exited with ${code} before printing ${pattern}:\n${output}`)),
    );
  });
}

const exported = (output: string, name: string) => {
  const match = new RegExp(`${name}=(\\S+)`).exec(output);
  if (match === null) throw new Error(`${name} not printed`);
  return match[1]!;
};

describe('npm run local (lib/local/emulators/serve.ts)', () => {
  it('serves a provisioned stack behind the chaos proxy, prints paste-ready exports and stops on SIGINT', async () => {
    // One process (node --import tsx), so the signal reaches the server itself as Ctrl-C would.
    child = spawn(
      process.execPath,
      ['--import', 'tsx', 'lib/local/emulators/serve.ts', '--chaos', '--write-rate', '0'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const output = await waitForOutput(child, /export BUCKET_NAME=.*\n/);
    const s3Endpoint = exported(output, 'AWS_ENDPOINT_URL_S3');
    expect(output).toContain(`(chaos proxy; emulator at `);

    const s3 = new S3Client({
      endpoint: s3Endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      forcePathStyle: true,
      maxAttempts: 1,
    });
    const sqs = new SQSClient({
      endpoint: exported(output, 'AWS_ENDPOINT_URL_SQS'),
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    try {
      await expect(
        s3.send(new PutObjectCommand({ Bucket: exported(output, 'BUCKET_NAME'), Key: 't=a/k', Body: '{}' })),
      ).rejects.toMatchObject({ name: 'SlowDown' });
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: exported(output, 'QUEUE_URL'),
          AttributeNames: ['RedrivePolicy'],
        }),
      );
      expect(JSON.parse(Attributes!.RedrivePolicy!).maxReceiveCount).toBe(5);
    } finally {
      s3.destroy();
      sqs.destroy();
    }

    const stopped = waitForOutput(child, /stopped \(SIGINT\)/);
    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    const tail = await stopped;
    expect(code).toBe(0);
    expect(tail).toContain('"throttled":1');
  });
});
