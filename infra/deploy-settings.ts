import { z } from 'zod';
import { EnvironmentConfigError } from './environment-config-error.js';

/**
 * Settings that differ per deployment rather than per environment shape: where alarms go and where the
 * runbooks are read. Each can be given without editing cdk.json, as a CDK context key
 * (`npx cdk deploy -c env=prod -c alarmEmail=oncall@example.com`) or an environment variable
 * (`S3_INGEST_ALARM_EMAIL`); context wins over the variable, which wins over cdk.json's environment block.
 */

export const topicArn = z
  .string()
  .regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/, 'must be an SNS topic ARN');

/** An absolute http(s) URL, kept without its trailing slashes so paths can be appended. */
export const baseUrl = z
  .string()
  .max(400)
  .refine((value) => {
    try {
      return ['http:', 'https:'].includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL, e.g. https://github.com/<org>/<repo>/blob/main')
  .transform((value) => value.replace(/\/+$/, ''));

/** One deployment setting: its context key, its environment variable, where it lands in the block. */
interface DeploySetting {
  readonly context: string;
  readonly env: string;
  /** The key's path in an environment block of cdk.json. */
  readonly path: readonly [string] | readonly [string, string];
  readonly schema: z.ZodType;
}

export const DEPLOY_SETTINGS = [
  { context: 'alarmEmail', env: 'S3_INGEST_ALARM_EMAIL', path: ['alarms', 'email'], schema: z.email() },
  {
    context: 'alarmTopicArn',
    env: 'S3_INGEST_ALARM_TOPIC_ARN',
    path: ['alarms', 'topicArn'],
    schema: topicArn,
  },
  {
    context: 'ticketEmail',
    env: 'S3_INGEST_TICKET_EMAIL',
    path: ['alarms', 'ticketEmail'],
    schema: z.email(),
  },
  {
    context: 'ticketTopicArn',
    env: 'S3_INGEST_TICKET_TOPIC_ARN',
    path: ['alarms', 'ticketTopicArn'],
    schema: topicArn,
  },
  { context: 'runbookBaseUrl', env: 'S3_INGEST_RUNBOOK_BASE_URL', path: ['runbookBaseUrl'], schema: baseUrl },
] as const satisfies readonly DeploySetting[];

export type DeploySettingKey = (typeof DEPLOY_SETTINGS)[number]['context'];

type Env = Readonly<Record<string, string | undefined>>;

function given(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/**
 * The environment block with every deployment setting given by context or environment variable written
 * in. Throws `EnvironmentConfigError` naming `-c <key>` or the variable when a value is not valid.
 */
export function applyDeploySettings(
  block: Record<string, unknown>,
  getContext: (key: string) => unknown,
  env: Env,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...block };
  for (const setting of DEPLOY_SETTINGS) {
    const fromContext = given(getContext(setting.context));
    const value = fromContext ?? given(env[setting.env]);
    if (value === undefined) continue;
    const source = fromContext === undefined ? setting.env : `-c ${setting.context}`;
    const parsed = setting.schema.safeParse(value);
    if (!parsed.success) {
      throw new EnvironmentConfigError(`${source}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    }
    const [head, leaf] = setting.path;
    if (leaf === undefined) out[head] = value;
    else out[head] = { ...(out[head] as Record<string, unknown> | undefined), [leaf]: value };
  }
  return out;
}

/**
 * The URL the repository's files are read at, from package.json's `repository` (a string such as
 * `github:org/repo` or `org/repo`, or `{ url }`): GitHub and GitLab only, whose file URLs are known.
 */
export function runbookBaseFromRepository(repository: unknown): string | undefined {
  const text = typeof repository === 'string' ? repository : (repository as { url?: unknown } | null)?.url;
  if (typeof text !== 'string') return undefined;
  const shorthand = /^(?:(github|gitlab):)?([\w.-]+\/[\w.-]+)$/.exec(text);
  const url =
    shorthand === null
      ? /^(?:git\+)?https:\/\/(github\.com|gitlab\.com)\/([\w.-]+\/[\w.-]+?)(?:\.git)?\/?$/.exec(text)
      : [text, `${shorthand[1] ?? 'github'}.com`, shorthand[2]];
  if (url === null) return undefined;
  const [, host, path] = url;
  return host === 'gitlab.com' || host === 'gitlab'
    ? `https://gitlab.com/${path}/-/blob/HEAD`
    : `https://github.com/${path}/blob/HEAD`;
}

/** One missing deployment setting: what to set (a clause of the error line) and a `-c` example. */
export interface MissingDeploySetting {
  readonly clause: string;
  readonly example: string;
}

const RUNBOOK_BASE_EXAMPLE = 'https://github.com/<org>/<repo>/blob/main';

/** What a non-dev environment still lacks: alarm destinations, the runbook base URL. */
export function missingDeploySettings(settings: {
  readonly alarms: {
    readonly email?: string | undefined;
    readonly topicArn?: string | undefined;
    readonly ticketEmail?: string | undefined;
    readonly ticketTopicArn?: string | undefined;
  };
  readonly runbookBaseUrl?: string | undefined;
}): MissingDeploySetting[] {
  const { email, topicArn: pageTopic, ticketEmail, ticketTopicArn } = settings.alarms;
  const hasTicket = ticketEmail !== undefined || ticketTopicArn !== undefined;
  const missing: MissingDeploySetting[] = [];
  // Tickets fall back to the page email (an email never wakes anyone), never to a pager topic.
  if (email === undefined && pageTopic === undefined) {
    missing.push({
      clause: hasTicket
        ? 'alarmEmail or alarmTopicArn (page alarms reach nobody)'
        : 'alarmEmail (pages and tickets), or alarmTopicArn with ticketEmail or ticketTopicArn (alarms reach nobody)',
      example: '-c alarmEmail=oncall@example.com',
    });
  } else if (email === undefined && !hasTicket) {
    missing.push({
      clause:
        'ticketEmail or ticketTopicArn (ticket alarms reach nobody; a page topic is no ticket destination)',
      example: '-c ticketEmail=team@example.com',
    });
  }
  if (settings.runbookBaseUrl === undefined) {
    missing.push({
      clause: 'runbookBaseUrl (alarm runbook links must be absolute outside dev)',
      example: `-c runbookBaseUrl=${RUNBOOK_BASE_EXAMPLE}`,
    });
  }
  return missing;
}

/** The one-line message of an environment missing deployment settings: what to set and where. */
export function missingDeploySettingsMessage(
  envPath: string,
  envName: string,
  missing: readonly MissingDeploySetting[],
): string {
  const variables = DEPLOY_SETTINGS.map((s) => s.env).join(', ');
  const jsonKeys = DEPLOY_SETTINGS.map((s) => s.path.join('.')).join(', ');
  const example = `npx cdk deploy -c env=${envName} ${missing.map((m) => m.example).join(' ')}`;
  return `${envPath}: set ${missing.map((m) => m.clause).join('; and ')}. Give each as -c <key>=<value> (${example}), as an environment variable (${variables}), or in cdk.json under ${envPath} (${jsonKeys}).`;
}
