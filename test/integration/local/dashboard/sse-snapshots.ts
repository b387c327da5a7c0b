import type { DashboardSnapshot, SeriesView } from '../../../../lib/local/dashboard/dashboard-state.js';

/**
 * Reads the dashboard's event stream (`<url>events`) until a snapshot satisfies `done`, and returns it; the
 * last snapshot read if the stream ends or `timeoutMs` passes first.
 */
export async function snapshotWhen(
  url: string,
  done: (snapshot: DashboardSnapshot) => boolean,
  timeoutMs = 60_000,
): Promise<DashboardSnapshot> {
  const res = await fetch(`${url}events?seconds=300`, { signal: AbortSignal.timeout(timeoutMs) });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let last: DashboardSnapshot | undefined;
  try {
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffer += value;
      const events = buffer.split('\n\n');
      buffer = events.pop() ?? '';
      for (const event of events) {
        const data = event.split('\n').find((line) => line.startsWith('data: '));
        if (data === undefined) continue;
        last = JSON.parse(data.slice('data: '.length)) as DashboardSnapshot;
        if (done(last)) return last;
      }
    }
  } catch (error) {
    if (last === undefined) throw error;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  if (last === undefined) throw new Error('the event stream sent no snapshot');
  return last;
}

/** The line labelled `label` of widget `id`. */
export function lineOf(snapshot: DashboardSnapshot, id: string, label: string): SeriesView | undefined {
  return snapshot.widgets.find((w) => w.id === id)?.series.find((s) => s.label === label);
}
