import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventLog, readEventLog } from '../../../../lib/local/pipeline-process/event-log.js';
import { ContainerBookings } from '../../../../lib/local/pipeline-process/logged-budgets.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function bookingsWithLog(): { bookings: ContainerBookings; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 's3-ingest-bookings-'));
  dirs.push(dir);
  const file = join(dir, 'log.ndjson');
  return { bookings: new ContainerBookings(new EventLog(file), 0), file };
}

const booking = { rate: 100, startAt: 1_000, endsAt: 2_000 };
const name = 'prefix:bucket/t=a/';

describe('ContainerBookings: which prefixes a holder writes on', () => {
  it('a prefix stays held between a booking reported and the next one, until the invocation ends', () => {
    const { bookings, file } = bookingsWithLog();
    expect(bookings.holding(name)).toBe(false);
    const fence = bookings.open(name, booking);
    expect(bookings.holding(name)).toBe(true);
    // Its slots are over: the holder reports, then books again. Its reads and the writes still settling
    // stay in flight meanwhile, under the holder's pool, not an unbooked tenant's few writes.
    bookings.report(name, fence);
    expect(bookings.on(name)).toBeUndefined();
    expect(bookings.holding(name)).toBe(true);
    bookings.endInvocation();
    expect(bookings.holding(name)).toBe(false);
    expect(readEventLog(file).filter((l) => l.event === 'rate-report')).toHaveLength(1);
  });

  it('a prefix never booked in the invocation is not held', () => {
    const { bookings } = bookingsWithLog();
    bookings.open(name, booking);
    bookings.endInvocation();
    expect(bookings.holding('prefix:bucket/t=b/')).toBe(false);
    expect(bookings.holding(name)).toBe(false);
  });
});
