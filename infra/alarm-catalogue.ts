/**
 * Every alarm the stack creates: its construct id, who it reaches and what it means in one line. The
 * construct id is also the heading of its section in docs/runbooks.md, and the anchor each alarm's
 * description links to, so a renamed alarm without a runbook section fails the infra tests.
 */

/**
 * `page`: someone must act now (data is waiting, failing, or about to expire). `ticket`: someone must act
 * this week (bad producer messages, capacity running hot); never wakes anyone.
 */
export type AlarmSeverity = 'page' | 'ticket';

export const ALARM_SEVERITIES = {
  OldestMessageAge: 'page',
  DeadLettersArrived: 'page',
  DeadLetterAge: 'page',
  DeadLettersWaiting: 'ticket',
  FunctionErrors: 'page',
  FunctionThrottles: 'page',
  PoolErrorRate: 'page',
  MessagesRejected: 'ticket',
  RejectedMessageAge: 'ticket',
  RecordsFailedRate: 'ticket',
  DurationNearTimeout: 'ticket',
  SlowDownRate: 'ticket',
  SemaphoreErrors: 'ticket',
} as const satisfies Record<string, AlarmSeverity>;

export type AlarmId = keyof typeof ALARM_SEVERITIES;

export const ALARM_IDS = Object.keys(ALARM_SEVERITIES) as AlarmId[];

/** The anchor of an alarm's runbook section: GitHub's slug of the `## <AlarmId>` heading. */
export function runbookAnchor(id: AlarmId): string {
  return id.toLowerCase();
}

/** Where the runbooks live in the repository. */
export const RUNBOOK_PATH = 'docs/runbooks.md';

/**
 * `<runbookBaseUrl>/docs/runbooks.md`, or the path relative to the repository without a base URL (dev
 * only: outside dev the configuration requires one).
 */
export function runbooksUrl(runbookBaseUrl: string | undefined): string {
  return runbookBaseUrl === undefined ? RUNBOOK_PATH : `${runbookBaseUrl}/${RUNBOOK_PATH}`;
}

/** `<runbooksUrl>#<anchor>`: what an on-call engineer opens from the notification. */
export function runbookLink(runbookBaseUrl: string | undefined, id: AlarmId): string {
  return `${runbooksUrl(runbookBaseUrl)}#${runbookAnchor(id)}`;
}
