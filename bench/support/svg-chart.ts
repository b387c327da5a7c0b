// A small dependency-free SVG line chart: stacked panels sharing an x axis, one polyline per series,
// with axes, ticks and a legend. Enough for benchmark READMEs; no interactivity.

export interface Series {
  name: string;
  /** [x, y] points in x order. */
  points: ReadonlyArray<readonly [number, number]>;
}

export interface Panel {
  title: string;
  yLabel: string;
  series: readonly Series[];
  /** Optional horizontal reference lines (e.g. the model's limit). */
  references?: ReadonlyArray<{ y: number; label: string }>;
  /**
   * A logarithmic y axis (ticks at powers of 10), for series orders of magnitude apart; points at or below
   * 0 are left out.
   * @default false
   */
  logScale?: boolean;
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  panels: readonly Panel[];
  width?: number;
  panelHeight?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Round tick step (1, 2 or 5 x 10^k) giving about `count` ticks over `span`. */
function tickStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw || 1));
  const residual = raw / magnitude;
  return (residual > 5 ? 10 : residual > 2 ? 5 : residual > 1 ? 2 : 1) * magnitude;
}

function formatTick(value: number): string {
  if (Math.abs(value) >= 1_000_000) return `${+(value / 1_000_000).toFixed(1)}M`;
  if (Math.abs(value) >= 1000) return `${+(value / 1000).toFixed(1)}k`;
  return `${+value.toFixed(2)}`;
}

export function renderLineChart(options: ChartOptions): string {
  const width = options.width ?? 900;
  const panelHeight = options.panelHeight ?? 220;
  const margin = { left: 70, right: 170, top: 40, bottom: 40 };
  const gap = 40;
  const plotWidth = width - margin.left - margin.right;
  const height = margin.top + options.panels.length * (panelHeight + gap) - gap + margin.bottom;
  const allX = options.panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x)));
  const xMin = Math.min(0, ...allX);
  const xMax = Math.max(xMin + 1, ...allX);
  const sx = (x: number) => margin.left + ((x - xMin) / (xMax - xMin)) * plotWidth;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(options.title)}</text>`,
  ];
  const xStep = tickStep(xMax - xMin, 10);
  options.panels.forEach((panel, index) => {
    const top = margin.top + index * (panelHeight + gap);
    const bottom = top + panelHeight;
    const log = panel.logScale === true;
    const plotted = ([, y]: readonly [number, number]) => Number.isFinite(y) && (!log || y > 0);
    const refs = (panel.references ?? []).filter((r) => plotted([0, r.y]));
    const ys = [
      ...panel.series.flatMap((s) => s.points.filter(plotted).map(([, y]) => y)),
      ...refs.map((r) => r.y),
    ];
    const yTicks: number[] = [];
    let sy: (y: number) => number;
    if (log) {
      // Whole decades around the data, so every tick is a power of 10.
      const low = Math.floor(Math.log10(ys.length === 0 ? 1 : Math.min(...ys)));
      const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(...ys, 1))));
      for (let e = low; e <= high; e++) yTicks.push(10 ** e);
      sy = (y) => bottom - ((Math.log10(y) - low) / (high - low)) * panelHeight;
    } else {
      const yMax = Math.max(1, ...ys) * 1.05;
      const yStep = tickStep(yMax, 5);
      for (let y = 0; y <= yMax; y += yStep) yTicks.push(y);
      sy = (y) => bottom - (Math.min(y, yMax) / yMax) * panelHeight;
    }
    out.push(`<text x="${margin.left}" y="${top - 6}" font-weight="bold">${escapeXml(panel.title)}</text>`);
    for (const y of yTicks) {
      out.push(
        `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${sy(y)}" y2="${sy(y)}" stroke="#eee"/>`,
        `<text x="${margin.left - 6}" y="${sy(y) + 4}" text-anchor="end">${formatTick(y)}</text>`,
      );
    }
    for (let x = Math.ceil(xMin / xStep) * xStep; x <= xMax; x += xStep) {
      out.push(
        `<line x1="${sx(x)}" x2="${sx(x)}" y1="${top}" y2="${bottom}" stroke="#f3f3f3"/>`,
        `<text x="${sx(x)}" y="${bottom + 14}" text-anchor="middle">${formatTick(x)}</text>`,
      );
    }
    out.push(
      `<rect x="${margin.left}" y="${top}" width="${plotWidth}" height="${panelHeight}" fill="none" stroke="#999"/>`,
      `<text transform="translate(16 ${top + panelHeight / 2}) rotate(-90)" text-anchor="middle">${escapeXml(panel.yLabel)}</text>`,
    );
    for (const ref of refs) {
      out.push(
        `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${sy(ref.y)}" y2="${sy(ref.y)}" stroke="#555" stroke-dasharray="5 4"/>`,
        `<text x="${margin.left + plotWidth - 4}" y="${sy(ref.y) - 4}" text-anchor="end" fill="#555">${escapeXml(ref.label)}</text>`,
      );
    }
    panel.series.forEach((series, i) => {
      const color = COLORS[i % COLORS.length]!;
      const d = series.points
        .filter(plotted)
        .map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`)
        .join(' ');
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${d}"/>`);
      // A one-point series draws no line: mark its point.
      if (!d.includes(' ') && d !== '') {
        const [cx, cy] = d.split(',');
        out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${color}"/>`);
      }
      const ly = top + 14 + i * 16;
      out.push(
        `<line x1="${width - margin.right + 12}" x2="${width - margin.right + 32}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`,
        `<text x="${width - margin.right + 38}" y="${ly}">${escapeXml(series.name)}</text>`,
      );
    });
  });
  out.push(
    `<text x="${margin.left + plotWidth / 2}" y="${height - 8}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
