// What a fault-matrix run arranges around the handler so that its cell's call happens at all
// (`MatrixCall.scenario`): a slow tenant prefix for the lease resize, another holder of the tenant's
// prefix permits (with the rate engine, of its schedule's slots) for the deferral send. The plain cells
// need nothing.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { IngestConfig } from '../../../lib/ingest/config.js';
import { dynamoRateBudgets } from '../../../lib/ingest/handler/run/prefix-budgets.js';
import {
  ASSUMED_WRITE_LATENCY_MS,
  dynamoSemaphores,
} from '../../../lib/ingest/handler/run/tenant-permits.js';
import type { FaultProxy } from '../../../lib/local/faults/fault-proxy.js';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';
import { permitsFor } from '../../../lib/semaphore/permits-for.js';
import type { Lease } from '../../../lib/semaphore/types.js';
import { MATRIX_TENANT } from './matrix-batch.js';
import { type FaultSchedule, type MatrixScenario, SLOW_PREFIX_DELAY_MS } from './matrix-cells.js';

/**
 * Handler settings a scenario changes (over `MATRIX_HANDLER_ENV`). `slow-prefix`: 20 writes/s, so the
 * tenant prefix's first grant is 3 permits (20/s x 100 ms assumed x 1.5 slack) against the pool's 4, and
 * the resize grows the lease to 4 (a resize whose answer is lost then leaves the lease's holder entry
 * with more permits than the lease knows of: its release must give those back).
 */
export const SCENARIO_ENV: Readonly<Record<MatrixScenario, Readonly<Record<string, string>>>> = {
  plain: {},
  'slow-prefix': { S3_PREFIX_WRITE_RATE: '20' },
  'prefix-held': {},
};

/** How long the `prefix-held` holder's lease lasts unless released: past any cell run. */
const HOLDER_LEASE_MS = 120_000;

export interface ScenarioStage {
  /**
   * Called before each invocation with the faults the cell's call met so far: the `prefix-held` holder
   * gives its permits back once the fault has fired (`flaky`: after its three invocations).
   */
  beforeInvocation(round: number, injectedSoFar: number): Promise<void>;
  /** Undoes what the scenario set up (idempotent). */
  close(): Promise<void>;
}

export interface ScenarioContext {
  readonly scenario: MatrixScenario;
  readonly schedule: FaultSchedule;
  readonly config: IngestConfig;
  /** The run's semaphore table. */
  readonly tableName: string;
  /** The S3 fault proxy the handler's S3 client goes through. */
  readonly s3Proxy: FaultProxy;
  /** A DynamoDB client straight to the emulator (the holder is not the handler: no faults on its calls). */
  readonly dynamodb: DynamoDBClient;
}

/** Sets up `context.scenario` for one run. */
export async function stageScenario(context: ScenarioContext): Promise<ScenarioStage> {
  switch (context.scenario) {
    case 'plain':
      return { beforeInvocation: async () => {}, close: async () => {} };
    case 'slow-prefix':
      return slowPrefix(context.s3Proxy);
    case 'prefix-held':
      return prefixHeld(context);
  }
}

function slowPrefix(s3Proxy: FaultProxy): ScenarioStage {
  s3Proxy.setRules([
    {
      name: 'slow tenant prefix',
      match: (c) => c.key.startsWith(`t=${MATRIX_TENANT}/`),
      fault: 'delay',
      delayMs: SLOW_PREFIX_DELAY_MS,
    },
  ]);
  return {
    beforeInvocation: async () => {},
    close: async () => s3Proxy.setRules([]),
  };
}

/**
 * Takes every permit of the tenant's prefix semaphore, built as the handler builds it (same name, limit,
 * rate and adaptive options, `dynamoSemaphores`), with a lease that announces no end: the handler's turn
 * wait (`TURN_WAIT_MS`) then ends in `SemaphoreTimeoutError` and the tenant's records are deferred.
 */
async function prefixHeld(context: ScenarioContext): Promise<ScenarioStage> {
  const { schedule, config, tableName, dynamodb } = context;
  if (config.fleetCap === 'rate') return budgetHeld(context);
  const rate = config.s3PrefixWriteRate;
  const semaphore = dynamoSemaphores(config, dynamodb, tableName)(
    `prefix:${config.bucketName}/t=${MATRIX_TENANT}/`,
    permitsFor({ ratePerSecond: rate, latencyMs: ASSUMED_WRITE_LATENCY_MS }),
    rate,
  );
  let lease: Lease | undefined = await semaphore.acquire(semaphore.limit, {
    min: 1,
    leaseMs: HOLDER_LEASE_MS,
    deadline: Date.now() + 10_000,
  });
  const release = async () => {
    const held = lease;
    lease = undefined;
    await held?.release();
  };
  return heldUntilFaulted(schedule, release);
}

/** The stage of a holder that gives back once the cell's fault has fired (`flaky`: after three invocations). */
function heldUntilFaulted(schedule: FaultSchedule, release: () => Promise<void>): ScenarioStage {
  return {
    beforeInvocation: async (round, injectedSoFar) => {
      if (schedule === 'flaky' ? round > 3 : injectedSoFar > 0) await release();
    },
    close: release,
  };
}

/**
 * How far ahead of an invocation the `prefix-held` form of the rate engine books the tenant prefix's slots:
 * past the tenant's latest start (at most half of the 3 s to the cutoff), so its booking is out of turn.
 */
const BOOKED_AHEAD_MS = 2_000;

/**
 * The rate engine's form (`FLEET_CAP=rate`): nothing is held, so another holder books every slot of the
 * tenant prefix's schedule up to `BOOKED_AHEAD_MS` past each invocation's start, with the handler's own
 * budgets (`dynamoRateBudgets`), until the cell's fault has fired (`flaky`: for three invocations): the
 * schedule is booked past the tenant's latest start, so its records are deferred until its first free
 * slot. Its slots pass unused.
 */
async function budgetHeld({
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
