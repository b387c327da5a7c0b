import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../../../lib/local/emulators/serve-args.js';

describe('parseServeArgs (npm run local flags)', () => {
  it('starts without chaos by default', () => {
    expect(parseServeArgs([])).toEqual({ port: 0, help: false });
  });

  it('enables chaos with --chaos alone, and with any chaos flag', () => {
    expect(parseServeArgs(['--chaos']).chaos).toEqual({});
    expect(parseServeArgs(['--write-rate', '100']).chaos).toEqual({ writesPerSecond: 100 });
  });

  it('maps every chaos flag onto the behaviour model options', () => {
    const options = parseServeArgs([
      '--port=4566',
      '--write-rate=200',
      '--read-rate=300',
      '--burst-seconds=0.5',
      '--latency-median=20',
      '--latency-p99=150',
      '--error-rate=0.01',
      '--reset-rate=0.02',
      '--stall-rate=0.03',
      '--stall-ms=5000',
      '--slowdown-rate=0.1',
      '--seed=9',
      '--bucket=b',
      '--queue=q',
      '--table=t',
    ]);
    expect(options).toEqual({
      port: 4566,
      help: false,
      bucket: 'b',
      queueName: 'q',
      tableName: 't',
      chaos: {
        writesPerSecond: 200,
        readsPerSecond: 300,
        burstSeconds: 0.5,
        seed: 9,
        latency: { medianMs: 20, p99Ms: 150 },
        faults: {
          internalErrorRate: 0.01,
          resetRate: 0.02,
          stallRate: 0.03,
          stallMs: 5000,
          slowDownRate: 0.1,
        },
      },
    });
  });

  it('names the flag at fault', () => {
    expect(() => parseServeArgs(['--write-rate', 'fast'])).toThrow(
      expect.objectContaining({ name: 'InvalidLocalOptionError', option: '--write-rate' }),
    );
    expect(() => parseServeArgs(['--latency-median', '20'])).toThrow(
      expect.objectContaining({ option: '--latency-median' }),
    );
    expect(() => parseServeArgs(['--nonsense'])).toThrow(expect.objectContaining({ option: 'argv' }));
  });
});
