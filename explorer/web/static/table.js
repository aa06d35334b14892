// The results table: each row is built once, when it is first displayed, and
// then only its text, classes and place change, so a change costs a few
// milliseconds even with a thousand rows. Only the first x.limit matched
// rows are in the document; more follow as the reader scrolls.
import { formatParams, formatSeconds, formatTPS, maxCamerasLabel, maxCamerasTitle, deviceLabel, formatWatts } from './logic.js';
import { $, el, setText, formatDate, plural } from './dom.js';

// PAGE_ROWS rows are put in the table at a time; more follow as the reader
// scrolls, so a change never lays out a thousand rows the reader cannot see.
// The server writes as many into the served page (explorer.FirstRowsShown).
export const PAGE_ROWS = 50;

// The table's columns: the nine of the seed, then power, J per answer, W
// per camera and cost, at Max Cameras.
export const TABLE_COLUMNS = 13;
const ENERGY_CELLS = ['c-power', 'c-jpa', 'c-wpc', 'c-cost'];

// A row's elements are made the first time it is displayed: with
// thousands of rows, making all of them before the first render would
// cost more than the render, and most are never scrolled to.
const rowProto = el('tr', { class: 'row' });
for (let i = 0; i < TABLE_COLUMNS; i++) rowProto.append(el('td'));

export function buildRow(it) {
  const tr = rowProto.cloneNode(true);
  const td = tr.children;
  const r = it.row;
  tr.dataset.id = r.id;
  const btn = el('button', { type: 'button', class: 'toggle', 'aria-expanded': 'false' }, el('span', { class: 'chev', 'aria-hidden': 'true' }), el('span', { class: 'name', text: r.model }));
  td[0].className = 'c-model';
  td[0].append(btn);
  if (r.simulated) td[0].append(el('span', { class: 'badge badge-sim', text: 'SIMULATED', title: 'From a simulated run, not a measurement of real hardware' }));
  // The latest run got worse than the one before: link the two runs' comparison.
  if (r.regression) td[0].append(el('a', { class: 'badge badge-worse', href: r.regression.compare, text: `worse than ${formatDate(r.regression.date).slice(0, 10)}`, title: `The latest run is worse than run ${r.regression.than} in ${plural(r.regression.worse, 'figure', 'figures')}: open the comparison` }));
  const why = el('span', { class: 'why' });
  why.hidden = true;
  td[0].append(why);
  td[0].append(el('span', { class: 'setup', text: [formatParams(r.params_b), r.quantization, r.engine, deviceLabel(r)].filter((v) => v && v !== '—').join(' · ') }));
  td[1].className = 'num';
  td[1].textContent = formatParams(r.params_b);
  td[2].textContent = r.quantization;
  td[3].textContent = r.engine;
  td[4].textContent = deviceLabel(r);
  if (r.power_mode) td[4].title = `Measured in the power setting ${r.power_mode}: each setting is its own row`;
  td[5].className = 'num c-rt';
  td[6].className = 'num c-tps';
  td[7].className = 'num c-max';
  td[8].className = 'c-result';
  const badge = el('span', { class: 'result' });
  td[8].append(badge);
  for (let i = 9; i < TABLE_COLUMNS; i++) td[i].className = `num ${ENERGY_CELLS[i - 9]}`;
  it.tr = tr;
  it.cells = { rt: td[5], tps: td[6], max: td[7], result: badge, toggle: btn, why, energy: [...td].slice(9) };
  it.cache = { cls: '', rt: null, tps: null, max: null, maxTitle: '', res: null, why: '', energy: '' };
}

// paintRow writes a row's figures at its view (it.view), touching only what
// changed since the last paint.
function paintRow(x, it) {
  if (!it.tr) buildRow(it);
  const v = it.view;
  const c = it.cache;
  // A combination where every request failed says so, and why, instead
  // of a bare dash; a statistic a row cannot be judged by says n/a.
  const rt = v.allFailed ? 'all failed' : v.unknown ? 'n/a' : formatSeconds(v.rt);
  if (c.rt !== rt) { it.cells.rt.textContent = rt; c.rt = rt; }
  if (c.why !== v.why) {
    if (v.why) it.cells.rt.title = v.why; else it.cells.rt.removeAttribute('title');
    setText(it.cells.why, v.why);
    it.cells.why.hidden = !v.why;
    c.why = v.why;
  }
  const tps = v.tpsNA ? 'n/a' : formatTPS(v.tps);
  if (c.tps !== tps) { it.cells.tps.textContent = tps; c.tps = tps; }
  const max = maxCamerasLabel(v.mc);
  if (c.max !== max) { it.cells.max.textContent = max; c.max = max; }
  const maxTitle = maxCamerasTitle(v.mc);
  if (c.maxTitle !== maxTitle) {
    if (maxTitle) it.cells.max.title = maxTitle; else it.cells.max.removeAttribute('title');
    c.maxTitle = maxTitle;
  }
  const res = v.unknown ? 'n/a' : v.result == null ? '—' : v.result ? 'PASS' : 'FAIL';
  if (c.res !== res) {
    it.cells.result.textContent = res;
    it.cells.result.className = `result ${v.result == null ? 'result-none' : v.result ? 'result-pass' : 'result-fail'}`;
    c.res = res;
  }
  paintEnergy(it);
  const cls = `row ${v.result == null ? 'nodata' : v.result ? 'pass' : 'fail'}${it === x.openItem ? ' open' : ''}`;
  if (c.cls !== cls) { it.tr.className = cls; c.cls = cls; }
}

// paintEnergy writes the draw at Max Cameras and the cost: "n/a" where a
// level kept up without power samples (never 0 W), "—" where no level did.
function paintEnergy(it) {
  const v = it.view;
  const e = v.energy;
  const none = v.noPower ? 'n/a' : '—';
  const texts = e
    ? [formatWatts(e.powerW), e.joules == null ? 'n/a' : formatWatts(e.joules), e.wattsPerCamera.toFixed(2), v.cost == null ? '—' : v.cost.toFixed(2)]
    : [none, none, none, none];
  const title = v.noPower ? 'no power samples' : e && e.source === 'gpu' ? 'the GPU alone, not the whole host' : '';
  const key = texts.join('|') + title;
  if (it.cache.energy === key) return;
  it.cache.energy = key;
  it.cells.energy.forEach((td, i) => {
    td.textContent = texts[i];
    if (title && i < 3) td.title = title; else td.removeAttribute('title');
  });
}

// display puts the first x.limit matched rows in the table; the others are
// not in the document at all, so they cost no style or layout.
export function display(x) {
  const rows = x.matched.length > x.limit ? x.matched.slice(0, x.limit) : x.matched;
  for (const it of rows) paintRow(x, it);
  let same = rows.length === x.displayed.length;
  for (let i = 0; same && i < rows.length; i++) same = rows[i] === x.displayed[i];
  if (!same) {
    const frag = document.createDocumentFragment();
    for (const it of rows) {
      frag.append(it.tr);
      if (it.detail) frag.append(it.detail.tr);
    }
    x.tbody.replaceChildren(frag);
    x.displayed = rows;
  }
  const more = $('more');
  const rest = x.matched.length - rows.length;
  more.hidden = rest <= 0;
  if (rest > 0) setText($('more-text'), `Showing the first ${rows.length} of ${x.matched.length} rows.`);
}

function showMore(x, n) {
  x.limit = Math.max(PAGE_ROWS, x.displayed.length + n);
  display(x);
}

// wireMore brings more rows on the buttons under the table, and as the
// reader scrolls near its end.
export function wireMore(x) {
  $('more-button').addEventListener('click', () => showMore(x, PAGE_ROWS));
  $('all-button').addEventListener('click', () => showMore(x, x.matched.length));
  if (!('IntersectionObserver' in window)) return;
  const io = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && x.matched.length > x.displayed.length) {
      showMore(x, PAGE_ROWS);
      // Observing afresh reports again if the end is still near (a tall window).
      io.unobserve($('more'));
      io.observe($('more'));
    }
  }, { rootMargin: '600px' });
  io.observe($('more'));
}

// buildHeader sorts by a column when its head is clicked, and the other
// way when it is clicked again.
export function buildHeader(x) {
  for (const th of document.querySelectorAll('#table thead th')) {
    th.querySelector('button').addEventListener('click', () => {
      const key = th.dataset.key;
      // Power, energy and cost: the least first.
      const firstDir = key === 'maxcams' || key === 'tps' || key === 'result' || key === 'params' ? 'desc' : 'asc';
      if (x.st.sort && x.st.sort.key === key) x.st.sort = { key, dir: x.st.sort.dir === 'asc' ? 'desc' : 'asc' };
      else x.st.sort = { key, dir: firstDir };
      x.render();
    });
  }
}

export function paintHeader(x) {
  const st = x.st;
  for (const th of document.querySelectorAll('#table thead th')) {
    const s = st.sort && st.sort.key === th.dataset.key ? (st.sort.dir === 'asc' ? 'ascending' : 'descending') : 'none';
    if (th.getAttribute('aria-sort') !== s) th.setAttribute('aria-sort', s);
  }
}
