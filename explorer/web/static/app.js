// The explorer page: loads the Dataset (inline in an exported file, else from
// GET /api/explorer/data), wires the page's parts (each its own module) to
// one shared state, and draws the view again on every change.
import { DEFAULT_TARGET, rowMeasuredAt, rowView, matchesFilters, sortValue, compareKeyed } from './logic.js';
import { showLabChrome } from './labchrome.js';
import { buildCost, syncCost, paintCostHead } from './cost.js';
import { display, wireMore, buildHeader, paintHeader } from './table.js';
import { explorerState, selection, readURL, writeURL } from './state.js';
import { buildFilters, syncFilters, paintFilterOutputs } from './filters.js';
import { buildSelectors, syncSelectors, paintButtons } from './selectors.js';
import { wireRowToggles, collapse, expand, paintDetail } from './detail.js';
import { buildPresets } from './presets.js';
import { paintSummary, paintGenerated } from './summary.js';
import { buildShare } from './share.js';

const DATA_URL = '/api/explorer/data';
const startedAt = performance.now();

// loadDataset reads the dataset: inline in an exported file, else the
// served page's answer.
async function loadDataset() {
  const inline = document.getElementById('vlmfleet-data');
  if (inline) return JSON.parse(inline.textContent);
  // The request the served page's <link rel="preload"> made already, as
  // the page's head started it: this takes its answer.
  const res = await fetch(DATA_URL);
  if (!res.ok) throw new Error(`GET ${DATA_URL}: ${res.status} ${res.statusText}`);
  return res.json();
}

function normaliseDataset(ds) {
  if (!ds || typeof ds !== 'object' || Array.isArray(ds)) throw new Error('the data is not an explorer dataset');
  if (ds.rows == null) ds.rows = []; // an empty store encodes no rows as null
  if (!Array.isArray(ds.rows)) throw new Error('the data has no "rows" list');
  for (const r of ds.rows) {
    r.points = Array.isArray(r.points) ? r.points : [];
    r.explanation = Array.isArray(r.explanation) ? r.explanation : [];
    r.other_runs = Array.isArray(r.other_runs) ? r.other_runs : [];
    r.run = r.run || {};
  }
  return ds;
}

// render works out which rows the view shows, in which order, and paints
// the table, the selectors, the summary and the open row.
function render(x) {
  const t = performance.now();
  const sel = selection(x);
  let measuredHere = 0;
  let simShown = 0;
  const next = [];
  const key = x.st.sort && x.st.sort.key;
  for (const it of x.items) {
    const here = rowMeasuredAt(it.row, sel.size, sel.rowCameras, sel.interval);
    it.view = rowView(it.row, sel);
    it.shown = here && matchesFilters(it.row, it.view, x.st.filters);
    if (here) measuredHere++;
    if (it.shown) {
      if (it.row.simulated) simShown++;
      if (key) it.sortKey = sortValue(it.row, it.view, key, x.ranks);
      next.push(it);
    }
  }
  if (key) next.sort((a, b) => compareKeyed(a, b, x.st.sort.dir));
  x.matched = next;
  if (x.openItem && !x.openItem.shown) collapse(x);
  const wanted = x.st.open && x.itemById.get(x.st.open);
  if (wanted) {
    const at = x.matched.indexOf(wanted);
    if (at >= x.limit) x.limit = at + 1;
  }
  display(x);
  paintButtons(x, sel);
  paintFilterOutputs(x);
  paintHeader(x);
  paintSummary(x, sel, x.matched.length, measuredHere, simShown);
  paintCostHead(x);
  if (!x.openItem && wanted && wanted.shown) expand(x, wanted);
  else if (x.openItem) paintDetail(x, x.openItem, sel);
  writeURL(x);
  x.perf.lastRenderMs = performance.now() - t;
}

// syncControls writes the state into the inputs (after the URL, a preset
// or Clear filters changed it).
function syncControls(x) {
  syncFilters(x);
  syncSelectors(x);
  syncCost(x);
}

function applyURL(x) {
  readURL(x);
  syncControls(x);
}

// Explorer owns the page's state; nothing outside it changes.
function createExplorer(ds) {
  const x = explorerState(ds);
  x.render = () => render(x);
  x.sync = () => syncControls(x);
  return { start: () => start(x), perf: x.perf, state: () => JSON.parse(JSON.stringify(x.st)), defaultTarget: DEFAULT_TARGET };
}

function start(x) {
  const t = performance.now();
  buildSelectors(x);
  buildFilters(x);
  buildCost(x);
  buildHeader(x);
  buildShare(x);
  buildPresets(x);
  wireRowToggles(x);
  wireMore(x);
  applyURL(x);
  x.tbody.replaceChildren(); // the served page's first rows: the explorer's own replace them
  render(x);
  document.body.offsetHeight; // include style and layout in the figure
  x.perf.firstRenderMs = performance.now() - t;
  x.perf.sinceNavigationMs = performance.now();
  x.perf.moduleStartMs = startedAt;
  window.addEventListener('hashchange', () => {
    collapse(x);
    applyURL(x);
    render(x);
  });
  paintGenerated(x);
}

async function main() {
  // The served page's table holds the first rows of the default view
  // (written by the server); another view in the URL (a filter, a sort)
  // has other rows, so they go until the explorer shows that view's.
  if (location.hash.replace(/^#/, '') !== '') document.getElementById('tbody').replaceChildren();
  // Served by a controller: the links to its other pages, and its health.
  showLabChrome();
  let ds;
  try {
    ds = normaliseDataset(await loadDataset());
  } catch (err) {
    // Without the data the page cannot filter, sort or open a row: the
    // served rows go rather than look like a table that works.
    document.getElementById('tbody').replaceChildren();
    const box = document.getElementById('load-error');
    box.hidden = false;
    box.textContent = `The results could not be loaded: ${err.message}`;
    window.vlmfleetExplorer = { ready: false, error: String(err.message) };
    return;
  }
  // When the data was in hand (fetched and parsed), since the navigation:
  // what the first render waited for before the page's own work.
  const dataLoadedMs = performance.now();
  const x = createExplorer(ds);
  x.perf.dataLoadedMs = dataLoadedMs;
  x.start();
  // A handle for scripts and the browser tests: timings and the view state.
  window.vlmfleetExplorer = { ready: true, perf: x.perf, state: x.state };
  document.documentElement.dataset.ready = 'true';
}

main();
