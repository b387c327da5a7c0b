import { GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** A queue as its ARN names it: `arn:<partition>:sqs:<region>:<account>:<name>`. */
export interface QueueName {
  readonly account: string;
  readonly name: string;
}

const QUEUE_ARN = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:(\d{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/;

/** The account and name an SQS queue ARN names, or undefined when it is not one. */
export function queueOfArn(arn: string): QueueName | undefined {
  const match = QUEUE_ARN.exec(arn);
  return match === null ? undefined : { account: match[1] as string, name: match[2] as string };
}

/** Whether the queue URL `url` (`https://<host>/<account>/<name>`, whatever the host) is the queue `arn`. */
export function isQueue(arn: string, url: string): boolean {
  const queue = queueOfArn(arn);
  if (queue === undefined) return false;
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return false;
  }
  return path === `/${queue.account}/${queue.name}`;
}

/** Queue URLs by ARN (`GetQueueUrl`, once per ARN); undefined for an ARN that names no queue SQS knows. */
export class QueueUrls {
  readonly #known = new Map<string, Promise<string | undefined>>();

  constructor(private readonly sqs: SQSClient) {}

  urlOf(arn: string): Promise<string | undefined> {
    let url = this.#known.get(arn);
    if (url === undefined) {
      url = this.#resolve(arn);
      this.#known.set(arn, url);
    }
    return url;
  }

  async #resolve(arn: string): Promise<string | undefined> {
    const queue = queueOfArn(arn);
    if (queue === undefined) return undefined;
    try {
      const out = await this.sqs.send(
        new GetQueueUrlCommand({ QueueName: queue.name, QueueOwnerAWSAccountId: queue.account }),
      );
      return out.QueueUrl;
    } catch (error) {
      if ((error as { name?: string }).name === 'QueueDoesNotExist') return undefined;
      throw error;
    }
  }
}
