// `s3-ingest dlq redrive` against the real handler on the embedded stack: a redriven letter keeps its
// origin's identity and order, goes back to the queue it came from, and a redrive ends while the cause is
// unfixed, having moved each letter once.
import { setTimeout as sleep } from 'node:timers/promises';
import { type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../../lib/cli/main.js';
import { localClientConfig } from '../../support/local-aws.js';
import { drain } from '../../support/queues.js';
import { body } from '../../unit/ingest/handler/support.js';
import { useTestCredentials } from '../ingest/emulated-stack.js';
import { captureIo } from './capture-io.js';
import { type RedrivePipeline, redrivePipeline } from './redrive-pipeline.js';

useTestCredentials();
const sqs = new SQSClient(localClientConfig('sqs'));
const pipelines: RedrivePipeline[] = [];
afterAll(() => {
  for (const p of pipelines) p.close();
  sqs.destroy();
});

async function pipeline(producers: string[]): Promise<RedrivePipeline> {
  const p = await redrivePipeline(sqs, producers);
  pipelines.push(p);
  return p;
}

async function redrive(argv: string[]) {
  const io = captureIo();
  const code = await main(['dlq', 'redrive', '--yes', ...argv], io.value);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

async function peekAll(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 0,
      MessageAttributeNames: ['All'],
    }),
  );
  return Messages;
}

describe('dlq redrive keeps a letter its origin identity', () => {
  it('a redriven unsequenced write never overwrites a newer write to the same record', async () => {
    const p = await pipeline(['acme']);
    const older = await p.send('acme', body({ tenant: 'acme', id: 'r-1', data: { total: 1 } }));
    await p.exhaust('acme');
    await p.send('acme', body({ tenant: 'acme', id: 'r-1', data: { total: 2 } }));
    await p.deliver('acme');
    expect(await p.record('acme', 'r-1')).toEqual({ total: 2 });

    const r = await redrive(['--dlq-url', p.dlqUrl, '--to', p.queues.acme!.queueUrl]);
    expect(r.code).toBe(0);
    const [copy] = await peekAll(p.queues.acme!.queueUrl);
    expect(copy?.MessageAttributes?.['s3-ingest-origin']?.StringValue).toBe(older);
    await p.deliver('acme');
    expect(await p.record('acme', 'r-1')).toEqual({ total: 2 });
  });

  it('a redriven insert that derives its id from its message id does not create a second record', async () => {
    const p = await pipeline(['acme']);
    await p.send('acme', body({ tenant: 'acme', op: 'insert', data: { total: 3 } }));
    // Written, then the acknowledgement is lost until the redrive policy moves the message.
    await p.deliver('acme', { ackLost: true });
    await p.exhaust('acme');
    expect(await p.count('acme')).toBe(1);

    const r = await redrive(['--dlq-url', p.dlqUrl, '--to', p.queues.acme!.queueUrl]);
    expect(r.code).toBe(0);
    await p.deliver('acme');
    expect(await p.count('acme')).toBe(1);
  });
});

describe('dlq redrive ends', () => {
  it('moves a rejected letter once while its cause is unfixed, then stops with a summary', async () => {
    const p = await pipeline(['acme']);
    const original = await p.send('acme', body({ tenant: 'acme', resource: 'nope', id: 'x' }));
    await p.deliver('acme');
    const [letter] = await peekAll(p.dlqUrl);
    expect(letter?.MessageAttributes?.reason?.StringValue).toBe('unknown-resource');

    // The function keeps running: each copy is refused straight back into the DLQ.
    let running = true;
    const fn = (async () => {
      while (running) {
        await p.deliver('acme');
        await sleep(20);
      }
    })();
    const outcome = await Promise.race([
      redrive([
        '--dlq-url',
        p.dlqUrl,
        '--to',
        p.queues.acme!.queueUrl,
        '--include-rejected',
        '--reason',
        'unknown-resource',
        '--json',
      ]),
      sleep(20_000).then(() => 'still running'),
    ]);
    running = false;
    await fn;
    expect(outcome).not.toBe('still running');
    const r = outcome as Awaited<ReturnType<typeof redrive>>;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ moved: 1 });
    // The copy came back once; its letter still names the original message.
    await p.deliver('acme');
    const letters = await drain(sqs, p.dlqUrl);
    expect(letters).toHaveLength(1);
    expect(letters[0]?.MessageAttributes?.sourceMessageId?.StringValue).toBe(original);
  }, 40_000);
});

describe('dlq redrive routes each letter to the queue it came from', () => {
  it("never moves a producer's letter to another producer's queue", async () => {
    const p = await pipeline(['alpha', 'beta']);
    await p.send('alpha', body({ tenant: 'alpha', id: 'a-1', data: { total: 1 } }));
    await p.exhaust('alpha');
    // alpha claims beta's tenant through its own queue: refused (tenant-not-allowed).
    await p.send('alpha', body({ tenant: 'beta', id: 'b-1', data: { total: 1 } }));
    await p.deliver('alpha');
    expect((await peekAll(p.dlqUrl)).length).toBe(2);

    const toBeta = await redrive([
      '--dlq-url',
      p.dlqUrl,
      '--to',
      p.queues.beta!.queueUrl,
      '--include-rejected',
    ]);
    expect(toBeta.code).toBe(0);
    expect(toBeta.stdout).toMatch(/^moved 0 message\(s\)/);
    expect(toBeta.stdout).toContain('2 from another queue');
    expect(await peekAll(p.queues.beta!.queueUrl)).toHaveLength(0);

    const home = await redrive(['--dlq-url', p.dlqUrl, '--include-rejected']);
    expect(home.code).toBe(0);
    expect(home.stdout).toMatch(/^moved 2 message\(s\)/);
    await p.deliver('alpha');
    expect(await p.record('alpha', 'a-1')).toEqual({ total: 1 });
    expect(await p.count('beta')).toBe(0);
    const [refusedAgain] = await peekAll(p.dlqUrl);
    expect(refusedAgain?.MessageAttributes?.reason?.StringValue).toBe('tenant-not-allowed');
  });
});
