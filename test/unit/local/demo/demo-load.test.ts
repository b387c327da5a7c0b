import { describe, expect, it } from 'vitest';
import { validateWrite } from '../../../../lib/ingest/message/encode.js';
import { DEMO_RESOURCES, demoKey, generateDemoLoad } from '../../../../lib/local/demo/demo-load.js';

describe('generateDemoLoad', () => {
  it('is deterministic per seed and sends exactly the requested number of messages', () => {
    const a = generateDemoLoad({ tenants: 3, messages: 400, badRatio: 0.05, seed: 7 });
    const b = generateDemoLoad({ tenants: 3, messages: 400, badRatio: 0.05, seed: 7 });
    const c = generateDemoLoad({ tenants: 3, messages: 400, badRatio: 0.05, seed: 8 });
    expect(JSON.stringify(a.rounds)).toBe(JSON.stringify(b.rounds));
    expect(JSON.stringify(a.rounds)).not.toBe(JSON.stringify(c.rounds));
    const good = a.rounds.reduce((n, r) => n + r.writes.length, 0);
    const bad = a.rounds.reduce((n, r) => n + r.bad.length, 0);
    expect(good + bad).toBe(400);
    expect(bad).toBe(20);
    expect(new Set(a.rounds.flatMap((r) => r.bad.map((m) => m.kind))).size).toBe(4);
  });

  it('writes only valid messages, one per record per round, with a replayable final state', () => {
    const load = generateDemoLoad({ tenants: 4, messages: 1000, badRatio: 0 });
    const replay = new Map<string, Record<string, unknown> | null>();
    for (const round of load.rounds) {
      const keysThisRound = new Set<string>();
      for (const w of round.writes) {
        expect(() => validateWrite(w, { resources: DEMO_RESOURCES })).not.toThrow();
        const key = demoKey(w.tenant, w.resource, w.id!);
        expect(keysThisRound.has(key)).toBe(false);
        keysThisRound.add(key);
        const before = replay.get(key) ?? null;
        if (w.op === 'delete') replay.set(key, null);
        else if (w.op === 'update') replay.set(key, { ...before, ...w.data });
        else replay.set(key, { ...w.data });
      }
    }
    expect(replay).toEqual(load.expected);
    const finals = [...load.expected.values()];
    expect(finals.some((v) => v === null)).toBe(true);
    expect(finals.some((v) => v !== null && 'status' in v)).toBe(true);
    expect(load.rounds.length).toBeGreaterThanOrEqual(3);
  });
});
