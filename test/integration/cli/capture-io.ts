import type { CliIo } from '../../../lib/cli/io.js';
import { localAwsEndpoints } from '../../support/local-aws.js';

/** A CLI `io` on the embedded SQS that records what the command printed. */
export function captureIo(
  env: Record<string, string> = {},
  stdin?: CliIo['stdin'],
): { value: CliIo; stdout: () => string; stderr: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    value: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t), isTTY: false },
      env: {
        AWS_ENDPOINT_URL_SQS: localAwsEndpoints().sqs,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        ...env,
      },
      ...(stdin === undefined ? {} : { stdin }),
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}
