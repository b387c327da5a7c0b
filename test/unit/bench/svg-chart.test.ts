import { describe, expect, it } from 'vitest';
import { renderLineChart } from '../../../bench/support/svg-chart.js';

describe('renderLineChart', () => {
  it("marks a one-point series' point (a polyline of one point draws nothing); longer series get only their line", () => {
    const svg = renderLineChart({
      title: 't',
      xLabel: 'x',
      panels: [
        {
          title: 'p',
          yLabel: 'y',
          series: [
            { name: 'alone', points: [[3, 10]] },
            {
              name: 'line',
              points: [
                [1, 5],
                [2, 7],
              ],
            },
          ],
        },
      ],
    });
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
});
