// The chart in an expanded row (drawn by chartview.js), with its PNG
// download; drawn again when the target, size, frame clock or statistic
// changes.
import { drawChart, chartWorthDrawing, chartPNG, chartTitle } from './chartview.js';
import { el, download, slug } from './dom.js';

function chartKey(sel) {
  return `${sel.target}|${sel.size}|${sel.interval}|${sel.statistic}`;
}

export function buildRowChart(x, it, sel) {
  const box = it.detail.chartBox;
  const r = it.row;
  if (!chartWorthDrawing(r)) {
    box.append(el('p', { class: 'hint', text: 'Only one number of cameras was measured for this row, so there is no chart of response time as cameras are added.' }));
    return;
  }
  box.append(el('h3', { text: 'Response time as cameras are added (one image per camera)' }));
  if (!globalThis.Chart) {
    box.append(el('p', { class: 'hint', text: 'The chart library did not load.' }));
    return;
  }
  const canvas = el('canvas', { role: 'img', 'aria-label': `Chart: ${chartTitle(r)}, response time in seconds against the number of cameras, one line per image size, target as a dashed line.` });
  const wrap = el('div', { class: 'chart-wrap' }, canvas);
  const btn = el('button', { type: 'button', class: 'btn png', text: 'Download chart as PNG' });
  btn.addEventListener('click', (e) => {
    e.stopPropagation();
    if (!it.detail || !it.detail.chart) return;
    download(`${slug(chartTitle(r))}-response-time.png`, chartPNG(it.detail.chart));
  });
  box.append(wrap, btn);
  it.detail.canvas = canvas;
  it.detail.chart = drawChart(canvas, r, x.sizes, sel.target, sel.size, sel.interval, sel.statistic);
  it.detail.chartKey = chartKey(sel);
}

// redrawRowChart draws the open row's chart again where the view it was
// drawn at has changed.
export function redrawRowChart(x, it, sel) {
  const d = it.detail;
  const key = chartKey(sel);
  if (d.chart && d.chartKey !== key) {
    d.chart.destroy();
    d.chart = drawChart(d.canvas, it.row, x.sizes, sel.target, sel.size, sel.interval, sel.statistic);
    d.chartKey = key;
  }
}
