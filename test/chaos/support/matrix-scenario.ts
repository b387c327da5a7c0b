// What a fault-matrix run arranges around the handler so that its cell's call happens at all
// (`MatrixCall.scenario`): S3 refusing the tenant's writes for a step of its rate, another holder booking
// the tenant prefix's schedule for the deferral send. The plain cells need nothing.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { IngestConfig } from '../../../lib/ingest/config.js';
import { dynamoRateBudgets } from '../../../lib/ingest/handler/run/prefix-budgets.js';
import type { FaultProxy } from '../../../lib/local/faults/fault-proxy.js';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';
import { MATRIX_TENANT } from './matrix-batch.js';
import type { FaultSchedule, MatrixScenario } from './matrix-cells.js';

export interface ScenarioStage {
  /**
   * Called before each invocation with the faults the cell's call met so far: the scenario ends once the
   * fault has fired (`flaky`: `throttled-prefix` after the first invocation, `prefix-held` after three).
   */
  beforeInvocation(round: number, injectedSoFar: number): Promise<void>;
  /** Undoes what the scenario set up (idempotent). */
  close(): Promise<void>;
}

export interface ScenarioContext {
  readonly scenario: MatrixScenario;
  readonly schedule: FaultSchedule;
  readonly config: IngestConfig;
  /** The run's table (`SEMAPHORE_TABLE`: the prefixes' schedules). */
  readonly tableName: string;
  /** The S3 fault proxy the handler's S3 client goes through. */
  readonly s3Proxy: FaultProxy;
  /** A DynamoDB client straight to the emulator (the other holder is not the handler: no faults on its calls). */
  readonly dynamodb: DynamoDBClient;
}

/** Sets up `context.scenario` for one run. */
export async function stageScenario(context: ScenarioContext): Promise<ScenarioStage> {
  switch (context.scenario) {
    case 'plain':
      return { beforeInvocation: async () => {}, close: async () => {} };
    case 'throttled-prefix':
      return throttledPrefix(context);
    case 'prefix-held':
      return prefixHeld(context);
  }
}

/** Share of the tenant's PUTs S3 refuses in the `throttled-prefix` scenario: rounds well past overloaded. */
const THROTTLED_SHARE = 0.5;

/**
 * S3 answers SlowDown to `THROTTLED_SHARE` of the tenant's PUTs (the S3 proxy's seeded dice) until the
 * cell's fault has fired, in the first invocation only for `flaky`: the holder's rounds are overloaded, so
 * it steps the schedule's rate down. Later invocations write at the lower rate, unrefused.
 */
function throttledPrefix({ schedule, s3Proxy }: ScenarioContext): ScenarioStage {
  s3Proxy.setRules([
    {
      name: 'throttled tenant prefix',
      match: (c) => c.operation === 'PutObject' && c.key.startsWith(`t=${MATRIX_TENANT}/`),
      fault: 'throttle',
      probability: THROTTLED_SHARE,
    },
  ]);
  return {
    beforeInvocation: async (round, injectedSoFar) => {
      if (schedule === 'flaky' ? round > 1 : injectedSoFar > 0) s3Proxy.setRules([]);
    },
    close: async () => s3Proxy.setRules([]),
  };
}

/**
 * How far ahead of an invocation the `prefix-held` holder books the tenant prefix's slots:
 * past the tenant's latest start (at most half of the 3 s to the cutoff), so its booking is out of turn.
 */
const BOOKED_AHEAD_MS = 2_000;

/**
 * Another holder books every slot of the tenant prefix's schedule up to `BOOKED_AHEAD_MS` past each
 * invocation's start, with the handler's own budgets (`dynamoRateBudgets`), until the cell's fault has
 * fired (`flaky`: for three invocations): the schedule is booked past the tenant's latest start, so its
 * records are deferred until its first free slot. Its slots pass unused.
 */
async function prefixHeld({
  schedule,
  config,
  tableName,
  dynamodb,
}: ScenarioContext): Promise<ScenarioStage> {
  const ceiling = config.s3PrefixWriteRate;
  const budget = dynamoRateBudgets(
    config,
    dynamodb,
    tableName,
  )(`prefix:${config.bucketName}/t=${MATRIX_TENANT}/`, ceiling);
  let holding = true;
  const bookAhead = async () => {
    const now = Date.now();
    const until = now + BOOKED_AHEAD_MS;
    try {
      await budget.book({
        writes: Math.ceil((ceiling * BOOKED_AHEAD_MS) / 1000),
        latestStart: until,
        writeBy: until,
      });
    } catch (err) {
      // Booked that far ahead already: not one more slot fits.
      if (!(err instanceof SemaphoreTimeoutError)) throw err;
    }
  };
  return {
    beforeInvocation: async (round, injectedSoFar) => {
      if (schedule === 'flaky' ? round > 3 : injectedSoFar > 0) holding = false;
      if (holding) await bookAhead();
    },
    close: async () => {
      holding = false;
    },
  };
}
