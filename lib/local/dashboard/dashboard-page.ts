/*
 * The local dashboard's page: one HTML document and one plain script, served as they are (no build step, no
 * CDN, works offline). The script draws each widget of the snapshots the server streams as hand-drawn SVG
 * lines with a legend table of each line's newest value and, for sums, its total over the window; the DOM
 * carries them as data attributes (`data-widget`, `data-series`, `data-value`) for people and tests alike.
 */

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>s3-ingest local dashboard</title>
<style>
  body { font: 13px/1.35 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #16191f; }
  header { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: baseline; padding: 10px 16px; background: #232f3e; color: #fff; }
  header h1 { font-size: 16px; margin: 0; }
  header form { display: flex; gap: 6px; align-items: baseline; }
  header input { width: 90px; }
  #status { opacity: 0.85; }
  h2.group { font-size: 14px; margin: 14px 16px 4px; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 10px; padding: 0 16px; }
  .widget { background: #fff; border: 1px solid #d5dbdb; border-radius: 4px; padding: 8px 10px; }
  .widget h3 { font-size: 13px; margin: 0 0 4px; }
  .widget svg { width: 100%; height: 150px; display: block; }
  .widget table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
  .widget td { padding: 1px 4px; border-top: 1px solid #eee; }
  .widget td.num { text-align: right; white-space: nowrap; }
  .widget td.stat { color: #687078; }
  .widget tr.unmeasured td { color: #9ba3ab; font-style: italic; }
  .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
  .note { color: #687078; font-size: 12px; margin: 4px 0 0; }
</style>
</head>
<body>
<header>
  <h1>s3-ingest: local stack</h1>
  <span id="status">connecting...</span>
  <form id="limit-form">
    <label for="limit">S3 write limit per prefix (writes/s)</label>
    <input id="limit" type="number" min="1" step="1" required>
    <button type="submit">Set</button>
    <span id="limit-result"></span>
  </form>
</header>
<h2 class="group">CloudWatch dashboard widgets (periods of one second)</h2>
<div class="grid" id="cloudwatch"></div>
<h2 class="group">Only the local stack shows these</h2>
<div class="grid" id="local"></div>
<script src="/dashboard.js"></script>
</body>
</html>
`;

export const DASHBOARD_SCRIPT = `'use strict';
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const SVG = 'http://www.w3.org/2000/svg';
const W = 400;
const H = 150;
const PAD = { top: 14, right: 40, bottom: 14, left: 40 };

function node(tag, attrs, text) {
  const el = tag === 'svg' || tag === 'path' || tag === 'line' || tag === 'text' || tag === 'rect'
    ? document.createElementNS(SVG, tag)
    : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

function format(value) {
  if (value === null || value === undefined) return '-';
  if (Math.abs(value) >= 100) return String(Math.round(value));
  return String(Number(value.toFixed(2)));
}

function niceMax(max) {
  if (!(max > 0)) return 1;
  const step = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 5, 10]) if (m * step >= max) return m * step;
  return 10 * step;
}

let snapshotNow = 0;
let snapshotStart = 0;

function drawChart(widget) {
  const svg = node('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img' });
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const scale = {};
  for (const axis of ['left', 'right']) {
    let max = 0;
    for (const s of widget.series) if (s.axis === axis) for (const p of s.points) if (p !== null && p > max) max = p;
    if (axis === 'left' && widget.annotation) max = Math.max(max, widget.annotation.value);
    scale[axis] = niceMax(max);
  }
  svg.appendChild(node('rect', { x: PAD.left, y: PAD.top, width: plotW, height: plotH, fill: '#fafbfc', stroke: '#e1e4e8' }));
  svg.appendChild(node('text', { x: PAD.left - 4, y: PAD.top + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#687078' }, format(scale.left)));
  if (widget.series.some((s) => s.axis === 'right'))
    svg.appendChild(node('text', { x: W - PAD.right + 4, y: PAD.top + 4, 'font-size': 10, fill: '#687078' }, format(scale.right)));
  const y = (v, axis) => PAD.top + plotH - (v / scale[axis]) * plotH;
  const span = Math.round((snapshotNow - snapshotStart) / 1000);
  svg.appendChild(node('text', { x: PAD.left, y: H - 2, 'font-size': 10, fill: '#687078' }, '-' + span + ' s'));
  svg.appendChild(node('text', { x: W - PAD.right, y: H - 2, 'text-anchor': 'end', 'font-size': 10, fill: '#687078' }, 'now'));
  if (widget.annotation) {
    const ay = y(widget.annotation.value, 'left');
    svg.appendChild(node('line', { x1: PAD.left, x2: W - PAD.right, y1: ay, y2: ay, stroke: '#d62728', 'stroke-dasharray': '4 3' }));
    svg.appendChild(node('text', { x: PAD.left + 4, y: ay - 3, 'font-size': 10, fill: '#d62728' }, widget.annotation.label));
  }
  widget.series.forEach((s, i) => {
    const n = s.points.length;
    if (n === 0) return;
    let d = '';
    let pen = 'M';
    s.points.forEach((p, j) => {
      if (p === null) { pen = 'M'; return; }
      const x = PAD.left + (n === 1 ? plotW : (j / (n - 1)) * plotW);
      d += pen + x.toFixed(1) + ' ' + y(p, s.axis).toFixed(1) + ' ';
      pen = 'L';
    });
    if (d === '') return;
    svg.appendChild(node('path', {
      d: d,
      fill: 'none',
      stroke: COLORS[i % COLORS.length],
      'stroke-width': 1.5,
      'stroke-dasharray': s.axis === 'right' ? '5 2' : 'none',
      'vector-effect': 'non-scaling-stroke',
      'data-series': s.key,
    }));
  });
  return svg;
}

function drawLegend(widget) {
  const table = node('table');
  const head = node('tr');
  for (const name of ['line', 'statistic', 'newest', 'total']) head.appendChild(node('td', { class: name === 'line' ? '' : 'num stat' }, name));
  table.appendChild(head);
  widget.series.forEach((s, i) => {
    const row = node('tr', { 'data-series': s.key, 'data-label': s.label, 'data-statistic': s.statistic, class: s.measured ? '' : 'unmeasured' });
    const name = node('td');
    name.appendChild(node('span', { class: 'swatch', style: 'background:' + COLORS[i % COLORS.length] }));
    name.appendChild(document.createTextNode(s.label + (s.axis === 'right' ? ' (right)' : '') + (s.measured ? '' : ' (CloudWatch only)')));
    row.appendChild(name);
    row.appendChild(node('td', { class: 'num stat' }, s.statistic));
    row.appendChild(node('td', { class: 'num last', 'data-value': s.last === null ? '' : s.last }, format(s.last)));
    row.appendChild(node('td', { class: 'num total', 'data-value': s.total === null ? '' : s.total }, format(s.total)));
    table.appendChild(row);
  });
  return table;
}

function render(snapshot) {
  snapshotNow = snapshot.now;
  snapshotStart = snapshot.start;
  for (const widget of snapshot.widgets) {
    let section = document.getElementById('w-' + widget.id);
    if (section === null) {
      section = node('section', { class: 'widget', id: 'w-' + widget.id, 'data-widget': widget.id, 'data-group': widget.group });
      document.getElementById(widget.group).appendChild(section);
    }
    section.replaceChildren(node('h3', {}, widget.title), drawChart(widget), drawLegend(widget));
    if (widget.note) section.appendChild(node('p', { class: 'note' }, widget.note));
  }
  const limit = snapshot.s3WriteLimit === null ? 'none' : snapshot.s3WriteLimit + ' writes/s per prefix';
  document.getElementById('status').textContent =
    'updated ' + new Date(snapshot.now).toLocaleTimeString() + ' | EMF lines ' + snapshot.emfLines +
    (snapshot.emfErrors > 0 ? ' (' + snapshot.emfErrors + ' unreadable)' : '') + ' | S3 limit ' + limit;
  document.body.setAttribute('data-updated', String(snapshot.now));
}

document.getElementById('limit-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const result = document.getElementById('limit-result');
  const writesPerSecond = Number(document.getElementById('limit').value);
  const answer = await fetch('/api/s3-limit', {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ writesPerSecond: writesPerSecond }),
  });
  result.textContent = answer.ok ? 'set' : (await answer.text()).trim();
});

const events = new EventSource('/events');
events.onmessage = (event) => render(JSON.parse(event.data));
events.onerror = () => {
  document.getElementById('status').textContent = 'disconnected: the stack has stopped (or is restarting)';
};
`;
