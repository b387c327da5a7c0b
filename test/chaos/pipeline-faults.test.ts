import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { formatChaosReport, runChaosPipeline } from './support/chaos-run.js';
import { expectAccounted } from './support/expect-accounted.js';

// The cut of the fault-injection suite that runs in `npm test`: 300 messages, one SIGKILL. The full run
// (3,000 messages, two kills) is `npm run test:chaos` (test/chaos/pipeline-faults.chaos.ts).
const workDir = mkdtempSync(join(tmpdir(), 's3-ingest-chaos-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe('the whole local pipeline under S3 faults and a process kill', () => {
  it('loses nothing, duplicates nothing, and keeps the writes accepted per prefix within the slots booked and in-flight work within its bounds', async () => {
    const report = await runChaosPipeline({ messages: 300, kills: 1, seed: 11, workDir, timeoutMs: 150_000 });
    console.log(`chaos accounting (300 messages, 1 kill)\n${formatChaosReport(report)}`);
    expectAccounted(report, { messages: 300, kills: 1 });
  }, 160_000);
});
