import { vi } from 'vitest';

export interface Emf {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [key: string]: unknown;
}

/**
 * Captures what Powertools prints through its own `Console` on process.stdout / stderr (not the global
 * console, which vitest intercepts): EMF and info logs on stdout, warnings and errors on stderr.
 */
export function captureStdout() {
  const lines: string[] = [];
  const record = (chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(record),
    vi.spyOn(process.stderr, 'write').mockImplementation(record),
  ];
  const json = () =>
    lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return {
    restore: () => {
      for (const spy of spies) spy.mockRestore();
    },
    emf: () => json().filter((o): o is Emf => typeof o._aws === 'object') as Emf[],
    logs: () => json().filter((o) => o._aws === undefined),
  };
}
