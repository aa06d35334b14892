// The expanded row: a click on a row opens under it its measurements at
// the view, the results explained, the chart and the run; one row is open
// at a time, and the URL names it.
import { loadName, judgedSentence, explanationAt, judgedTTFT, formatSeconds, formatTPS, pointsAt, passes, failureText, energySentence } from './logic.js';
import { el, formatDate, plural } from './dom.js';
import { TABLE_COLUMNS, buildRow } from './table.js';
import { selection, writeURL } from './state.js';
import { buildRowChart, redrawRowChart } from './rowchart.js';

export function wireRowToggles(x) {
  x.tbody.addEventListener('click', (e) => {
    const tr = e.target.closest('tr.row');
    if (!tr) return;
    const it = x.itemById.get(tr.dataset.id);
    if (it) toggleRow(x, it);
  });
}

function toggleRow(x, it) {
  if (x.openItem === it) { collapse(x); x.st.open = null; } else { collapse(x); x.st.open = it.row.id; expand(x, it); }
  writeURL(x);
}

export function collapse(x) {
  if (!x.openItem) return;
  const it = x.openItem;
  if (it.detail.chart) it.detail.chart.destroy();
  it.detail.tr.remove();
  it.detail = null;
  it.cells.toggle.setAttribute('aria-expanded', 'false');
  it.tr.classList.remove('open');
  it.cache.cls = '';
  x.openItem = null;
}

export function expand(x, it) {
  if (!it.tr) buildRow(it);
  x.openItem = it;
  const td = el('td', { colspan: String(TABLE_COLUMNS) });
  const tr = el('tr', { class: 'detail' }, td);
  const measure = el('section', { class: 'd-measure' });
  const explain = el('section', { class: 'd-explain' });
  const chartBox = el('section', { class: 'd-chart' });
  td.append(el('div', { class: 'd-inner' }, el('div', { class: 'd-grid' }, measure, explain), chartBox, runMeta(it.row)));
  it.detail = { tr, measure, explain, chartBox, chart: null, canvas: null };
  it.tr.after(tr);
  it.cells.toggle.setAttribute('aria-expanded', 'true');
  it.tr.classList.add('open');
  it.cache.cls = '';
  const sel = selection(x);
  buildRowChart(x, it, sel);
  paintDetail(x, it, sel);
}

export function paintDetail(x, it, sel) {
  const mc = it.view.mc;
  const pts = pointsAt(it.row.points, sel.size, sel.images, sel.interval);
  const clock = sel.interval > 0 ? `, one frame every ${sel.interval} s per camera` : '';
  const judged = sel.statistic !== 'mean';
  const head = el('h3', { text: `Measurements at ${sel.size}, ${plural(sel.images, 'image', 'images')} per camera${clock}, against ${sel.target} s${judged ? ` by ${sel.statistic}` : ''}` });
  const body = pts.length
    ? measurementsTable(pts, sel, mc)
    : el('p', { class: 'hint', text: `Not measured at ${sel.size} with ${plural(sel.images, 'image', 'images')} per camera${clock}.` });
  it.detail.measure.replaceChildren(head, body, ...detailNotes(it.row, sel, mc));
  paintExplanation(it.detail.explain, it.row, sel);
  redrawRowChart(x, it, sel);
}

// measurementsTable is one line per number of cameras measured at the
// view, each marked PASS or FAIL against the target.
function measurementsTable(pts, sel, mc) {
  const judged = sel.statistic !== 'mean';
  const cols = ['Cameras', 'Response time (s)', judged ? `${sel.statistic}, all due (s)` : 'p90 (s)', 'TPS', 'Requests'];
  if (sel.interval > 0) cols.push('Frames due / sent / dropped');
  cols.push('Result');
  return el('table', { class: 'mini' },
    el('thead', {}, el('tr', {}, ...cols.map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...pts.map((p) => measurementRow(p, sel, mc))));
}

function measurementRow(p, sel, mc) {
  const known = mc.known !== false;
  const judged = sel.statistic !== 'mean';
  const ok = known && passes(p, sel.target, sel.statistic);
  const res = !known ? 'n/a' : ok ? 'PASS' : 'FAIL';
  const j = known ? judgedTTFT(p, sel.statistic) : null;
  const cams = el('th', { scope: 'row', class: 'num', text: String(p.cameras) });
  if (p.search) cams.append(el('span', { class: 'searched', text: ' (search)', title: 'A level chosen by the search for the exact Max Cameras' }));
  // Where a level was measured sustained, each says its load: Max
  // Cameras reads the sustained ones.
  if (mc.sustained) cams.append(el('span', { class: 'load', text: ` ${loadName(p)}` }));
  if (p.run) cams.append(el('span', { class: 'earlier', text: ' (earlier run)', title: `Measured by the earlier run ${p.run}: the latest run did not measure this level` }));
  return el('tr', { class: `${ok ? 'pass' : known ? 'fail' : 'nodata'}${p.cameras === sel.cameras ? ' current' : ''}` },
    cams,
    el('td', { class: 'num', text: p.completed > 0 ? formatSeconds(p.ttft) : '—' }),
    // Judged by a percentile, that percentile over every answer due
    // stands where the completed requests' p90 stands by the mean.
    judged ? el('td', { class: 'num c-judged', text: !known ? 'n/a' : j == null ? 'not started' : formatSeconds(j) })
      : el('td', { class: 'num', text: p.completed > 0 && p.ttft_p90 > 0 ? formatSeconds(p.ttft_p90) : '—' }),
    el('td', { class: 'num c-tps', text: p.completed > 0 ? (p.tps_na ? 'n/a' : formatTPS(p.tps)) : '—', title: p.tps_na ? 'Not measurable: no token came after the first one was read' : null }),
    el('td', { class: 'num', text: `${p.completed}${p.failed ? ` (${p.failed} failed)` : ''}`, title: p.completed === 0 ? failureText(p) : null }),
    sel.interval > 0 ? el('td', { class: `num c-frames${p.frames_dropped ? ' dropped' : ''}`, text: `${p.frames_due || 0} / ${p.frames_sent || 0} / ${p.frames_dropped || 0}` }) : null,
    el('td', {}, el('span', { class: `result ${!known ? 'result-none' : ok ? 'result-pass' : 'result-fail'}`, text: res })));
}

// paintExplanation writes the row in words at 720p, one image per
// camera, judged as the view judges: the Max Cameras it gives is the one
// the table shows at 720p.
function paintExplanation(box, row, sel) {
  const lines = explanationAt(row, sel.statistic, sel.target);
  const how = sel.statistic === 'mean' ? `a ${sel.target} s target by the mean` : `a ${sel.target} s target by ${sel.statistic}`;
  box.replaceChildren(el('h3', { text: 'The results explained' }),
    ...(lines.length ? lines.map((p) => el('p', { text: p })) : [el('p', { class: 'hint', text: 'No explanation for this row.' })]),
    el('p', { class: 'hint', text: `At 720p, one image per camera, ${how}.` }));
}

// detailNotes say under the measurements what the table cannot: Max
// Cameras in words where the view is not the default one the explanation
// is written at, what a "+" without a search leaves open, and why a
// statistic is not known.
function detailNotes(row, sel, mc) {
  const out = [];
  // The explanation is written at 720p and one image, judged as the view
  // judges: a view there needs no sentence of its own.
  const atDefault = sel.size === '720p' && sel.images === 1 && sel.interval === 0;
  const sentence = atDefault ? '' : judgedSentence(row.points, sel.size, sel.images, sel.interval, sel.statistic, sel.target);
  if (sentence) out.push(el('p', { class: 'd-sentence', text: sentence }));
  // The explanation carries the draw at the default view already.
  const energy = energySentence(row.points, sel.size, sel.images, sel.interval, sel.statistic, sel.target);
  if (energy && !atDefault) out.push(el('p', { class: 'd-energy', text: energy }));
  const earlier = [...new Set(pointsAt(row.points, sel.size, sel.images, sel.interval).filter((p) => p.run).map((p) => p.run))];
  if (earlier.length) {
    out.push(el('p', { class: 'hint d-earlier', text: `Levels marked (earlier run) come from ${earlier.length === 1 ? 'run' : 'runs'} ${earlier.join(', ')}: each level is the newest run's that measured it, so a later run that measured fewer levels does not hide them.` }));
  }
  if (!row.points.some((p) => p.power_w != null)) out.push(el('p', { class: 'hint d-nopower', text: 'No power samples for this row: power, energy per answer and cost read n/a.' }));
  if (mc.measured && mc.known !== false && mc.plus && !mc.search && mc.max > 1) {
    out.push(el('p', { class: 'hint d-search-hint' }, `${mc.max}+ means the highest number measured still kept up. A search would give the exact figure: `,
      el('code', { text: 'vlmfleet sweep --search' }), ', or ', el('code', { text: 'search: 64' }), ' in the workload.'));
  }
  if (mc.measured && mc.known === false) {
    out.push(el('p', { class: 'hint d-unknown' }, `${sel.statistic} n/a: published with means only. Its slow answers were not recorded, so it is judged by neither pass nor fail; choose Mean to read it as published.`));
  }
  return out;
}

// runMeta is the run a row's figures come from, and the configuration's
// other runs.
function runMeta(r) {
  const m = r.run;
  const dl = el('dl', { class: 'meta' });
  const add = (k, v, code) => { if (v) dl.append(el('dt', { text: k }), el('dd', {}, code ? el('code', { text: v }) : v)); };
  add('Date', formatDate(m.date));
  add('Run', m.id, true);
  add('Source', [r.source || m.source, m.origin].filter(Boolean).join(' · '));
  add('Engine version', m.engine_version);
  add('Engine command', (m.engine_command || []).join(' '), true);
  add('Platform', m.platform);
  add('Power mode', m.power_mode);
  add('Telemetry', m.telemetry);
  add('Requests', m.requests);
  // What makes the run's figures doubtful although it ran, one line each.
  if (m.warnings && m.warnings.length) dl.append(el('dt', { text: 'Warnings' }), el('dd', { class: 'warnings' }, el('ul', {}, ...m.warnings.map((w) => el('li', { text: w })))));
  if (r.simulated || m.simulated) add('Simulated', 'Yes: these numbers come from the simulator, not from real hardware.');
  const sec = el('section', { class: 'd-meta' }, el('h3', { text: 'Run' }), dl);
  if (r.other_runs.length) {
    sec.append(el('h4', { text: `Other runs of this configuration (${r.other_runs.length})` }),
      el('ul', { class: 'other-runs' }, ...r.other_runs.map((o) => el('li', {},
        `${formatDate(o.date)} · `, el('code', { text: o.id || '?' }),
        `${o.source ? ` · ${o.source}` : ''}${o.engine_version ? ` · ${o.engine_version}` : ''}${o.simulated ? ' · simulated' : ''}`))));
  }
  return sec;
}
