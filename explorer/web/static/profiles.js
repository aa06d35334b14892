// The "Latency & throughput" page: the published profile lines and the
// lab's measured ones from /api/explorer/profiles, laid out as NVIDIA's
// page lays them out (model → GPU → precision → TP, a Min Latency and a
// Max Throughput table each), a measured figure beside the published one
// with its difference in percent. The filters live in the URL, so that a
// link reopens the same view. window.vlmfleetProfiles says when the page
// is drawn, for the browser tests.

import { showLabChrome } from './labchrome.js';
import { csvText } from './logic.js';
import { el } from './dom.js';

const state = { ready: false, error: '', lines: [] };
window.vlmfleetProfiles = state;

const $ = (id) => document.getElementById(id);

const FILTERS = ['model', 'gpu', 'precision', 'source'];
const SOURCES = ['published', 'measured'];

// The tables' columns after ISL, OSL and image, as the published page has
// them; diff: whether a measured figure is set against the published one.
const COLUMNS = {
  min_latency: [
    { key: 'ttft_ms', title: 'Avg TTFT (msec)', decimals: 0, diff: true },
    { key: 'itl_ms', title: 'Avg ITL (msec)', decimals: 1, diff: true },
    { key: 'request_latency_ms', title: 'Avg Request Latency (msec)', decimals: 0, diff: true },
  ],
  max_throughput: [
    { key: 'concurrency', title: 'Concurrency', decimals: 0, diff: false },
    { key: 'itl_ms', title: 'Avg ITL (msec)', decimals: 1, diff: true },
    { key: 'request_throughput', title: 'Request Throughput (reqs/sec)', decimals: 2, diff: true },
  ],
};
const TITLES = { min_latency: 'Min Latency', max_throughput: 'Max Throughput' };

// The columns of the CSV: a row's fields as the API answers them.
const CSV_FIELDS = ['model', 'gpu', 'gpu_count', 'precision', 'tp', 'engine', 'profile', 'isl', 'osl', 'width', 'height',
  'image_format', 'concurrency', 'ttft_ms', 'itl_ms', 'request_latency_ms', 'request_throughput', 'output_tokens_per_sec',
  'osl_held', 'source', 'simulated', 'note'];

// fold is a name as lines are matched by: any case, no surrounding spaces.
const fold = (s) => String(s ?? '').trim().toLowerCase();

// keyOf is a row's identity, as the server's profiles.KeyOf: a measured
// line reproduces the published line of the same key.
function keyOf(r) {
  return [fold(r.model), fold(r.gpu), fold(r.precision), r.tp, r.profile, r.isl ?? 0, r.osl, r.width, r.height,
    fold(r.image_format)].join('|');
}

// joinLines pairs each measured row with the published row of its
// identity, in the order the rows come (the server's: the published lines
// in the page's order, each measured one after its published one).
function joinLines(rows) {
  const lines = [];
  const at = new Map();
  for (const r of rows) {
    const k = keyOf(r);
    let line = at.get(k);
    if (!line) {
      line = { key: k, pub: null, meas: null };
      at.set(k, line);
      lines.push(line);
    }
    if (r.source === 'published') line.pub = r;
    else line.meas = r;
  }
  return lines;
}

const rowOf = (line) => line.pub || line.meas;

// pct is the measured figure against the published one, in percent; null
// where either is missing or the published one is 0.
function pct(measured, published) {
  if (measured == null || published == null || published === 0) return null;
  return (measured - published) / published * 100;
}

function formatFigure(v, decimals) {
  return v == null ? '—' : v.toFixed(decimals);
}

function formatPct(v) {
  const s = v.toFixed(1);
  return `${v >= 0 && s !== '-0.0' ? '+' : ''}${s === '-0.0' ? '0.0' : s} %`;
}

// ---- The view: filters, in the URL ----

function readView() {
  const q = new URLSearchParams(location.search);
  const view = {};
  for (const f of FILTERS) view[f] = (q.get(f) || '').trim();
  if (!SOURCES.includes(view.source)) view.source = '';
  return view;
}

function writeView(view) {
  const q = new URLSearchParams();
  for (const f of FILTERS) if (view[f]) q.set(f, view[f]);
  const s = q.toString();
  history.replaceState(null, '', s ? `${location.pathname}?${s}` : location.pathname);
}

// shownRows is a line's rows the view keeps: a source filter keeps one side.
function shownRows(line, view) {
  return [line.pub, line.meas].filter(r => r && (!view.source || r.source === view.source));
}

function keeps(line, view) {
  const r = rowOf(line);
  return (!view.model || fold(r.model) === fold(view.model)) &&
    (!view.gpu || fold(r.gpu) === fold(view.gpu)) &&
    (!view.precision || fold(r.precision) === fold(view.precision)) &&
    shownRows(line, view).length > 0;
}

// fillOptions lists the names the lines have, once each in any case, and
// keeps the one chosen even when no line has it (a link from elsewhere).
function fillOptions(select, names, chosen) {
  const seen = new Map();
  for (const n of names) if (!seen.has(fold(n))) seen.set(fold(n), n);
  if (chosen && !seen.has(fold(chosen))) seen.set(fold(chosen), chosen);
  const first = select.options[0];
  select.replaceChildren(first, ...[...seen.values()].map(n => el('option', { value: n, text: n })));
  select.value = chosen ? seen.get(fold(chosen)) : '';
}

// ---- The tables ----

// groupLines nests the lines model → GPU → precision → TP, each heading in
// order of first appearance (TP by size), as the page does.
function groupLines(lines) {
  const models = new Map();
  const child = (map, name) => {
    if (!map.has(fold(name))) map.set(fold(name), { name, items: new Map() });
    return map.get(fold(name)).items;
  };
  for (const line of lines) {
    const r = rowOf(line);
    const tps = child(child(child(models, r.model), r.gpu), r.precision);
    if (!tps.has(r.tp)) tps.set(r.tp, { name: `TP${r.tp}`, tp: r.tp, min_latency: [], max_throughput: [] });
    tps.get(r.tp)[r.profile].push(line);
  }
  return models;
}

// figureCell is one side's figure: a measured one with its difference
// from the published one, and its marks.
function figureCell(line, col, side) {
  const r = line[side];
  const v = r ? r[col.key] : null;
  const td = el('td', { class: `fig ${side}`, 'data-col': col.key, 'data-side': side, text: formatFigure(v, col.decimals) });
  if (side !== 'meas' || !r) return td;
  if (r.simulated) td.classList.add('sim');
  if (r.osl_held === false) td.classList.add('short');
  const d = col.diff && line.pub ? pct(v, line.pub[col.key]) : null;
  if (d != null) td.append(' ', el('span', { class: 'diff', text: formatPct(d) }));
  return td;
}

// marksCell says what a measured line is: SIMULATED, OSL not held (with
// the mean the answers had, from the note), the engine and the run.
function marksCell(line) {
  const td = el('td', { class: 'marks' });
  const r = line.meas;
  if (!r) return td;
  const parts = String(r.note || '').split('; ').filter(p => p && p !== 'SIMULATED');
  const short = parts.find(p => p.startsWith('OSL not held'));
  if (r.simulated) td.append(el('span', { class: 'badge badge-sim', text: 'SIMULATED' }), ' ');
  if (r.osl_held === false) td.append(el('span', { class: 'badge badge-osl', text: short || 'OSL not held' }), ' ');
  const rest = parts.filter(p => p !== short);
  td.append(el('span', { class: 'note', text: [r.engine, ...rest].join(' · ') }));
  return td;
}

function lineRow(line, cols, sides, withISL) {
  const r = rowOf(line);
  const tr = el('tr', { 'data-key': line.key });
  if (withISL) tr.append(el('td', { text: r.isl == null ? '—' : String(r.isl) }));
  tr.append(el('td', { text: String(r.osl) }), el('td', { text: `${r.width}x${r.height}` }));
  for (const col of cols) for (const side of sides) tr.append(figureCell(line, col, side));
  if (sides.includes('meas')) tr.append(marksCell(line));
  return tr;
}

// tableHead is the published page's header row; with both sides shown, a
// second row names each figure's published and measured columns.
function tableHead(cols, sides, withISL) {
  const both = sides.length > 1;
  const names = [...(withISL ? ['ISL'] : []), 'OSL', 'Image Size (width x height in px)'];
  const top = el('tr', {}, ...names.map(t => el('th', { rowspan: both ? '2' : null, scope: 'col', text: t })));
  const sub = el('tr');
  for (const col of cols) {
    top.append(el('th', { colspan: both ? String(sides.length) : null, scope: both ? 'colgroup' : 'col', class: 'figure', text: col.title }));
    if (both) for (const side of sides) sub.append(el('th', { scope: 'col', class: `side ${side}`, text: side === 'pub' ? 'published' : 'measured' }));
  }
  if (sides.includes('meas')) top.append(el('th', { rowspan: both ? '2' : null, scope: 'col', text: 'Measured on' }));
  return both ? el('thead', {}, top, sub) : el('thead', {}, top);
}

// profileTable is one of a TP's two tables: published and measured
// figures side by side where the view shows both and a line has a
// measured one. A column no line shown has a figure in is left out, as
// the published page leaves out what it does not measure.
function profileTable(profile, lines, view) {
  const sides = [];
  if (view.source !== 'measured' && lines.some(l => l.pub)) sides.push('pub');
  if (view.source !== 'published' && lines.some(l => l.meas)) sides.push('meas');
  const has = (key) => lines.some(l => sides.some(side => l[side] && l[side][key] != null));
  const cols = COLUMNS[profile].filter(col => has(col.key));
  const withISL = has('isl');
  const body = el('tbody', {}, ...lines.map(l => lineRow(l, cols, sides, withISL)));
  const table = el('table', { class: 'profile', 'data-profile': profile }, tableHead(cols, sides, withISL), body);
  const title = profile === 'min_latency' ? `${TITLES[profile]} (concurrency 1)` : TITLES[profile];
  return el('div', { class: 'table-block' }, el('h6', { text: title }), el('div', { class: 'table-wrap' }, table));
}

function tpSection(tp, view) {
  const sec = el('section', { class: 'tp', 'data-tp': String(tp.tp) }, el('h5', { text: tp.name }));
  for (const profile of ['min_latency', 'max_throughput']) {
    if (tp[profile].length) sec.append(profileTable(profile, tp[profile], view));
  }
  return sec;
}

// drawGroups draws the lines the view keeps under their headings.
function drawGroups(lines, view) {
  const out = [];
  for (const model of groupLines(lines).values()) {
    const m = el('section', { class: 'model', 'data-model': model.name }, el('h2', { text: model.name }));
    for (const gpu of model.items.values()) {
      const g = el('section', { class: 'gpu', 'data-gpu': gpu.name }, el('h3', { text: gpu.name }));
      for (const prec of gpu.items.values()) {
        const p = el('section', { class: 'precision', 'data-precision': prec.name }, el('h4', { text: prec.name }));
        const tps = [...prec.items.values()].sort((a, b) => a.tp - b.tp);
        p.append(...tps.map(tp => tpSection(tp, view)));
        g.append(p);
      }
      m.append(g);
    }
    out.push(m);
  }
  $('groups').replaceChildren(...out);
}

// ---- CSV ----

function csvField(v) {
  const s = v == null ? '' : String(csvText(v));
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// toCSV is the rows shown, in the order shown, each as the API answers it.
function toCSV(lines, view) {
  const out = [CSV_FIELDS.join(',')];
  for (const line of lines) {
    for (const r of shownRows(line, view)) out.push(CSV_FIELDS.map(f => csvField(r[f])).join(','));
  }
  return out.join('\r\n') + '\r\n';
}

// ---- The page ----

function draw() {
  const view = readView();
  const rows = state.lines.map(rowOf);
  fillOptions($('f-model'), rows.map(r => r.model), view.model);
  fillOptions($('f-gpu'), rows.filter(r => !view.model || fold(r.model) === fold(view.model)).map(r => r.gpu), view.gpu);
  fillOptions($('f-precision'), rows.map(r => r.precision), view.precision);
  $('f-source').value = view.source;
  const shown = state.lines.filter(l => keeps(l, view));
  drawGroups(shown, view);
  $('empty').hidden = shown.length > 0;
  const n = shown.reduce((sum, l) => sum + shownRows(l, view).length, 0);
  $('count').textContent = `${n} ${n === 1 ? 'line' : 'lines'} shown`;
  $('csv').href = `data:text/csv;charset=utf-8,${encodeURIComponent(toCSV(shown, view))}`;
}

function onFilter() {
  const view = {};
  for (const f of FILTERS) view[f] = $(`f-${f}`).value;
  writeView(view);
  draw();
}

async function load() {
  showLabChrome();
  for (const f of FILTERS) $(`f-${f}`).addEventListener('change', onFilter);
  $('filters').addEventListener('submit', (e) => e.preventDefault());
  try {
    const res = await fetch('/api/explorer/profiles');
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
    state.lines = joinLines(body.rows || []);
    draw();
  } catch (err) {
    state.error = String(err.message || err);
    $('error').textContent = `Could not load the profile lines: ${state.error}`;
    $('error').hidden = false;
  }
  state.ready = true;
}

load();
