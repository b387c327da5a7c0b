import { describe, expect, it } from 'vitest';
import { type Panel, renderLineChart } from '../../../bench/support/svg-chart.js';

/** A one-panel chart of `series`, with the panel's other options. */
function chartOf(series: Panel['series'], options: Partial<Panel> = {}): string {
  return renderLineChart({
    title: 't',
    xLabel: 'x',
    panels: [{ title: 'p', yLabel: 'y', series, ...options }],
  });
}

describe('renderLineChart', () => {
  it("marks a one-point series' point (a polyline of one point draws nothing); longer series get only their line", () => {
    const svg = chartOf([
      { name: 'alone', points: [[3, 10]] },
      {
        name: 'line',
        points: [
          [1, 5],
          [2, 7],
        ],
      },
    ]);
    const circles = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)" r="3" fill="(#[0-9a-f]+)"\/>/g)];
    expect(circles).toHaveLength(1);
    // At the one point's polyline coordinates, in its series' colour.
    const alone =
      /<polyline fill="none" stroke="(#[0-9a-f]+)" stroke-width="1.5" points="([\d.]+),([\d.]+)"\/>/.exec(
        svg,
      );
    expect(alone).not.toBeNull();
    expect(circles[0]!.slice(1)).toEqual([alone![2], alone![3], alone![1]]);
  });

  it('on a log scale spaces decades evenly, ticks at powers of 10, and leaves out points at or below 0', () => {
    const svg = chartOf(
      [
        {
          name: 'decades',
          points: [
            [1, 10],
            [2, 100],
            [3, 0],
            [4, 1000],
          ],
        },
      ],
      { logScale: true },
    );
    const polyline = /<polyline [^>]* points="([^"]+)"\/>/.exec(svg);
    expect(polyline).not.toBeNull();
    const ys = polyline![1]!.split(' ').map((point) => Number(point.split(',')[1]));
    // Three points (the 0 left out), one decade apart each: equal steps up the panel.
    expect(ys).toHaveLength(3);
    expect(ys[0]! - ys[1]!).toBeGreaterThan(0);
    expect(ys[0]! - ys[1]!).toBeCloseTo(ys[1]! - ys[2]!, 5);
    const ticks = [...svg.matchAll(/<text x="[\d.]+" y="[\d.]+" text-anchor="end">([^<]+)<\/text>/g)].map(
      (m) => m[1],
    );
    expect(ticks).toEqual(['10', '100', '1k']);
  });
});
