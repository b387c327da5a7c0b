import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { formatChaosReport, runChaosPipeline } from './support/chaos-run.js';
import { expectAccounted } from './support/expect-accounted.js';

// `npm run test:chaos`: the full fault-injection run. 3,000 messages over 4 tenants through the whole local
// pipeline with 10 % SlowDown, 1 % 500, 1 % resets and 1 % stalls on S3, and the pipeline process SIGKILLed
// twice; then 1,000 messages over 2 tenants the same way.
const workDir = mkdtempSync(join(tmpdir(), 's3-ingest-chaos-full-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

const TITLE =
  'loses nothing, duplicates nothing, and keeps the writes accepted per prefix within the slots booked and in-flight work within its bounds';

describe('the whole local pipeline under S3 faults and two process kills', () => {
  // Four tenants: most batches give a tenant a handful of writes, so small tenants write unbooked in their
  // lanes and are promoted to booking after a SlowDown.
  it(TITLE, async () => {
    const report = await runChaosPipeline({
      messages: 3_000,
      kills: 2,
      tenants: 4,
      seed: 7,
      workDir,
      timeoutMs: 400_000,
      progress: (line) => console.log(line),
    });
    console.log(`chaos accounting (3,000 messages, 4 tenants, 2 kills)\n${formatChaosReport(report)}`);
    expectAccounted(report, { messages: 3_000, kills: 2 });
  });
});

describe('the same pipeline with two tenants', () => {
  // Two tenants, so most batches give each tenant a booking of a dozen writes or more: a booking's writes
  // then span more than the rate check's window, and a holder that did not pace would show (a run with the
  // pool's start interval disabled fails the check); more tenants make most bookings a handful of writes.
  it(TITLE, async () => {
    const report = await runChaosPipeline({
      messages: 1_000,
      kills: 2,
      tenants: 2,
      seed: 7,
      workDir: join(workDir, 'two-tenants'),
      timeoutMs: 400_000,
      progress: (line) => console.log(line),
    });
    console.log(`chaos accounting (1,000 messages, 2 tenants, 2 kills)\n${formatChaosReport(report)}`);
    expectAccounted(report, { messages: 1_000, kills: 2 });
  });
});
