// A sharded tenant's stripes (docs/decisions/striped-shard-budgets.md): how many, whose writes book one,
// and their budget names.
import { describe, expect, it } from 'vitest';
import {
  allSharded,
  stripeBudgetName,
  stripeCount,
} from '../../../../../lib/ingest/handler/run/shard-stripes.js';

const config = { resourceShards: { orders: 8, customers: 4, single: 1 } };

describe('shard stripes', () => {
  it('are the fewest shards of the sharded resources; none without any', () => {
    expect(stripeCount(config)).toBe(1);
    expect(stripeCount({ resourceShards: { orders: 8, customers: 4 } })).toBe(4);
    expect(stripeCount({ resourceShards: {} })).toBe(0);
    expect(stripeCount({})).toBe(0);
  });

  it('are booked only by writes that all go to sharded resources, one at least', () => {
    expect(allSharded(config, ['orders'])).toBe(true);
    expect(allSharded(config, ['orders', 'customers'])).toBe(true);
    // One write to an unsharded resource (declared with 1 shard, or not declared) books the tenant prefix.
    expect(allSharded(config, ['orders', 'single'])).toBe(false);
    expect(allSharded(config, ['orders', 'users'])).toBe(false);
    // Nothing to go by: no resources named, none declared sharded.
    expect(allSharded(config, [])).toBe(false);
    expect(allSharded(config, undefined)).toBe(false);
    expect(allSharded({}, ['orders'])).toBe(false);
  });

  it('name each stripe of the tenant apart, with the count, so another count starts other items', () => {
    expect(stripeBudgetName('bucket', 'acme', 2, 4)).toBe('prefix:bucket/t=acme/s=*/stripe=2of4');
    expect(stripeBudgetName('bucket', 'acme', 2, 8)).not.toBe(stripeBudgetName('bucket', 'acme', 2, 4));
  });
});
