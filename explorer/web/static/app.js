// The explorer page: loads the Dataset (inline in an exported file, else from
// GET /api/explorer/data), builds each row once, when it is first displayed,
// and then only updates text, classes, visibility and order, so a change
// costs a few milliseconds even with a thousand rows.
import { IMAGE_COUNTS, STATISTICS, RT_STOPS, PARAM_BUCKETS, DEFAULT_TARGET, defaultState, decodeState, encodeState, emptyFilters, filtersActive, sizesOf, availability, allCameraCounts, effectiveCameras, rowMeasuredAt, rowView, matchesFilters, stringRanks, sortValue, compareKeyed, maxCamerasLabel, maxCamerasTitle, loadName, judgedSentence, explanationAt, judgedTTFT, intervalsOf, intervalWords, formatParams, formatSeconds, formatTPS, pointsAt, passes, paramBucket, toCSV, deviceLabel, comparisonPair, failureText, engineExample, maxCamerasExample, SEED_QUANT, SEED_ENGINE, COST_DEFAULTS, COST_FIELDS, parseCostField, energySentence, formatWatts } from './logic.js';
import { drawChart, chartWorthDrawing, chartPNG, chartTitle } from './chartview.js';
import { showLabChrome } from './labchrome.js';

const DATA_URL = '/api/explorer/data';
// PAGE_ROWS rows are put in the table at a time; more follow as the reader
// scrolls, so a change never lays out a thousand rows the reader cannot see.
// The server writes as many into the served page (explorer.FirstRowsShown).
const PAGE_ROWS = 50;
const startedAt = performance.now();

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function setText(node, s) {
  if (node.textContent !== s) node.textContent = s;
}

function formatDate(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (isNaN(d) || d.getUTCFullYear() < 1970) return '—';
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function download(name, href) {
  const a = el('a', { href, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
}

function slug(s) {
  return s.toLowerCase().replace(/[^a-z0-9.]+/g, '-').replace(/^-|-$/g, '');
}

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

// The table's columns: the nine of the seed, then power, J per answer, W
// per camera and cost, at Max Cameras.
const TABLE_COLUMNS = 13;
const ENERGY_CELLS = ['c-power', 'c-jpa', 'c-wpc', 'c-cost'];
const COST_STORAGE_KEY = 'vlmfleet.explorer.cost';

// storedCost is the cost inputs as the browser kept them; a value that no
// longer reads keeps its default.
function storedCost() {
  const out = { ...COST_DEFAULTS };
  try {
    const kept = JSON.parse(localStorage.getItem(COST_STORAGE_KEY) || '{}');
    for (const field of Object.keys(COST_FIELDS)) {
      if (kept[field] == null) continue;
      const r = parseCostField(field, kept[field]);
      if (!r.error) out[field] = r.value;
    }
  } catch { /* no storage or a damaged entry: the defaults */ }
  return out;
}

// Explorer owns the page's state; nothing outside it changes.
function createExplorer(ds) {
  const $ = (id) => document.getElementById(id);
  const sizes = sizesOf(ds);
  const avail = availability(ds.rows);
  const cameraCounts = allCameraCounts(ds.rows);
  const intervals = intervalsOf(ds.rows);
  const minCamStops = [0, ...cameraCounts];
  const perf = { firstRenderMs: null, sinceNavigationMs: null, lastRenderMs: null, rows: ds.rows.length };
  let st = defaultState();
  let displayed = []; // the items whose rows are in the table, in order
  let matched = []; // every item shown at the selection and filters, in order
  let limit = PAGE_ROWS;
  let openItem = null;
  const ranks = stringRanks(ds.rows);

  const known = {
    devices: uniqueSorted(ds.rows.map((r) => r.device)),
    engines: uniqueSorted(ds.rows.map((r) => r.engine)),
    quants: uniqueSorted(ds.rows.map((r) => r.quantization)),
    models: uniqueSorted(ds.rows.map((r) => r.model)),
    params: PARAM_BUCKETS.filter((b) => ds.rows.some((r) => paramBucket(r.params_b) === b.id)).map((b) => b.id),
  };

  function uniqueSorted(a) {
    return [...new Set(a.filter((x) => x))].sort((x, y) => x.localeCompare(y, 'en', { numeric: true }));
  }

  const tbody = $('tbody');
  const items = ds.rows.map((row, index) => ({ row, index, view: null, tr: null, cells: null, shown: false, detail: null }));

  // ---- selection -------------------------------------------------------
  // rowCameras picks the rows and follows the Cameras selector whatever the
  // image count (Images per Camera is an assumption that leaves the rows in
  // place); cameras is where the figures are read, which is 1 with 3 or 5
  // images because only one camera was measured with several images. On a
  // frame clock only one image per request was measured, so it is read there.
  function selection() {
    const interval = st.interval;
    const images = interval > 0 ? 1 : st.images;
    return {
      size: st.size,
      images,
      cameras: effectiveCameras(avail, st.size, images, st.cameras, interval),
      rowCameras: effectiveCameras(avail, st.size, 1, st.cameras, interval),
      target: st.target,
      interval,
      statistic: st.statistic,
      cost: st.cost,
    };
  }

  // ---- building (once) -------------------------------------------------
  // A row's elements are made the first time it is displayed: with
  // thousands of rows, making all of them before the first render would
  // cost more than the render, and most are never scrolled to.
  const rowProto = el('tr', { class: 'row' });
  for (let i = 0; i < TABLE_COLUMNS; i++) rowProto.append(el('td'));
  function buildRow(it) {
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
    td[0].append(el('span', { class: 'setup', text: [formatParams(r.params_b), r.quantization, r.engine, deviceLabel(r)].filter((x) => x && x !== '—').join(' · ') }));
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

  function buildRows() {
    tbody.addEventListener('click', (e) => {
      const tr = e.target.closest('tr.row');
      if (!tr) return;
      const it = itemById.get(tr.dataset.id);
      if (it) toggleRow(it);
    });
  }
  const itemById = new Map(items.map((it) => [it.row.id, it]));

  // segmented fills the button group id with one button per value, named
  // by label; a click on one that is not disabled hands its value to pick
  // and redraws.
  function segmented(id, values, pick, label = String) {
    const box = $(id);
    for (const v of values) box.append(el('button', { type: 'button', class: 'seg', 'data-value': String(v), 'aria-pressed': 'false', text: label(v) }));
    box.addEventListener('click', (e) => {
      const b = e.target.closest('button');
      if (!b || b.disabled) return;
      pick(b.dataset.value);
      render();
    });
  }

  function buildSelectors() {
    segmented('size-buttons', sizes, (v) => { st.size = v; });
    segmented('camera-buttons', cameraCounts, (v) => { st.cameras = Number(v); });
    segmented('image-buttons', IMAGE_COUNTS, (v) => { st.images = Number(v); });
    // How cameras send appears only where some row was measured on a frame clock.
    $('pacing-field').hidden = intervals.length === 0;
    segmented('pacing-buttons', [0, ...intervals], (v) => { st.interval = Number(v); },
      (v) => (v > 0 ? `A frame every ${v} s` : 'Back to back'));
    segmented('stat-buttons', STATISTICS, (v) => { st.statistic = v; }, (v) => (v === 'mean' ? 'Mean' : v));
    // Power, energy and cost appear only where some run sampled power: the
    // published rows have none, and four columns of n/a would crowd them.
    const hasPower = ds.rows.some((r) => (r.points || []).some((p) => p.power_w != null));
    $('table').classList.toggle('no-power', !hasPower);
    $('cost').hidden = !hasPower;
    $('maxw').closest('.field').hidden = !hasPower;

    const num = $('target-number');
    const range = $('target-range');
    num.addEventListener('input', () => {
      const v = Number(num.value);
      if (num.value === '' || !isFinite(v) || v <= 0) { num.setAttribute('aria-invalid', 'true'); return; }
      num.removeAttribute('aria-invalid');
      st.target = v;
      range.value = String(Math.min(Number(range.max), v));
      render();
    });
    range.addEventListener('input', () => {
      st.target = Number(range.value);
      num.value = String(st.target);
      num.removeAttribute('aria-invalid');
      render();
    });
  }

  const chipGroups = {};
  function buildFilters() {
    const groups = [
      ['f-device', 'devices', known.devices, (v) => v],
      ['f-engine', 'engines', known.engines, (v) => v],
      ['f-quant', 'quants', known.quants, (v) => v],
      ['f-params', 'params', known.params, (v) => PARAM_BUCKETS.find((b) => b.id === v).label],
      ['f-model', 'models', known.models, (v) => v],
    ];
    for (const [id, key, values, label] of groups) {
      const box = $(id).querySelector('.chip-list');
      const inputs = new Map();
      const frag = document.createDocumentFragment();
      for (const v of values) {
        const input = el('input', { type: 'checkbox', value: v });
        const chip = el('label', { class: 'chip' }, input, el('span', { text: label(v) }));
        chip.dataset.search = label(v).toLowerCase();
        inputs.set(v, input);
        frag.append(chip);
      }
      box.append(frag);
      box.addEventListener('change', (e) => {
        e.target.parentElement.classList.toggle('on', e.target.checked);
        st.filters[key] = values.filter((v) => inputs.get(v).checked);
        render();
      });
      chipGroups[key] = inputs;
    }
    $('model-search').addEventListener('input', (e) => {
      const q = e.target.value.trim().toLowerCase();
      for (const chip of $('f-model').querySelectorAll('.chip')) chip.hidden = q !== '' && !chip.dataset.search.includes(q);
    });

    const rt = $('rt-range');
    rt.max = String(RT_STOPS.length - 1);
    rt.addEventListener('input', () => { st.filters.rtMax = RT_STOPS[Number(rt.value)]; render(); });
    const mc = $('mincam-range');
    mc.max = String(minCamStops.length - 1);
    mc.addEventListener('input', () => { st.filters.minCams = minCamStops[Number(mc.value)]; render(); });
    $('maxw').addEventListener('input', (e) => {
      const n = Number(e.target.value);
      st.filters.maxW = e.target.value.trim() !== '' && isFinite(n) && n > 0 ? n : null;
      render();
    });
    buildCost();

    const clear = () => { st.filters = emptyFilters(); $('model-search').value = ''; syncControls(); render(); };
    $('clear-filters').addEventListener('click', clear);
    $('clear-filters-empty').addEventListener('click', clear);
  }

  // buildCost wires the cost inputs: a bad value is refused, named, and the
  // last good one stays in use; a good one is kept in the browser too.
  function buildCost() {
    for (const field of Object.keys(COST_FIELDS)) {
      $(`cost-${field}`).addEventListener('input', (e) => {
        const r = parseCostField(field, e.target.value);
        const box = $('cost-error');
        if (r.error) {
          box.hidden = false;
          setText(box, `${r.error}; keeping ${st.cost[field]}.`);
          e.target.setAttribute('aria-invalid', 'true');
          return;
        }
        box.hidden = true;
        e.target.removeAttribute('aria-invalid');
        st.cost = { ...st.cost, [field]: r.value };
        try { localStorage.setItem(COST_STORAGE_KEY, JSON.stringify(st.cost)); } catch { /* storage off: the URL still keeps it */ }
        render();
      });
    }
  }

  function buildHeader() {
    for (const th of document.querySelectorAll('#table thead th')) {
      th.querySelector('button').addEventListener('click', () => {
        const key = th.dataset.key;
        // Power, energy and cost: the least first.
        const firstDir = key === 'maxcams' || key === 'tps' || key === 'result' || key === 'params' ? 'desc' : 'asc';
        if (st.sort && st.sort.key === key) st.sort = { key, dir: st.sort.dir === 'asc' ? 'desc' : 'asc' };
        else st.sort = { key, dir: firstDir };
        render();
      });
    }
  }

  function buildToolbar() {
    $('csv').addEventListener('click', () => {
      const sel = selection();
      const blob = new Blob([toCSV(matched, sel)], { type: 'text/csv;charset=utf-8' });
      const url = URL.createObjectURL(blob);
      download(`vlmfleet-explorer-${slug(sel.size)}-${sel.cameras}cam-${sel.images}img-${sel.target}s.csv`, url);
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    });
    $('copy-link').addEventListener('click', async () => {
      const b = $('copy-link');
      try {
        await navigator.clipboard.writeText(location.href);
        b.textContent = 'Link copied';
      } catch {
        window.prompt('Copy this link:', location.href);
      }
      setTimeout(() => { b.textContent = 'Copy link to this view'; }, 2000);
    });
  }

  function buildPresets() {
    const matchAll = (list, re) => list.filter((v) => re.test(v));
    const findModel = (name) => known.models.filter((m) => m === name || m.endsWith(`/${name}`));
    const exactOr = (list, name, re) => (list.includes(name) ? [name] : matchAll(list, re));
    // A preset appears only when the rows it shows exist, and its link
    // names the rows it selects.
    const quantPair = comparisonPair(ds.rows, 'quantization', SEED_QUANT);
    const enginePair = comparisonPair(ds.rows, 'engine', SEED_ENGINE);
    const list = (a) => (a.length > 2 ? `${a.slice(0, -1).join(', ')} and ${a[a.length - 1]}` : a.join(' and '));
    if (quantPair) setText($('preset-quant-link'), `${quantPair.model} at ${list(quantPair.rows.map((r) => r.quantization))} on ${quantPair.device}`);
    if (enginePair) setText($('preset-engine-link'), `${enginePair.model} under ${list(enginePair.rows.map((r) => r.engine))} on ${enginePair.device}`);
    $('preset-quant-link').hidden = !quantPair;
    $('preset-engine-link').hidden = !enginePair;
    $('preset-or').hidden = !quantPair || !enginePair;
    $('start-compare').hidden = !quantPair && !enginePair;
    $('start-compare').querySelector('button').dataset.preset = quantPair ? 'quant' : 'engine';
    $('start-agx').hidden = !known.devices.some((d) => /AGX Orin/i.test(d));
    $('start-1080p').hidden = !ds.rows.some((r) => (r.points || []).some((p) => p.size === '1080p'));
    setText($('guide-engine'), engineExample(ds.rows));
    setText($('guide-maxcams'), maxCamerasExample(ds.rows));
    const presets = {
      agx: () => {
        st.filters = emptyFilters();
        st.filters.devices = matchAll(known.devices, /AGX Orin/i);
        st.cameras = 1;
        st.sort = { key: 'maxcams', dir: 'desc' };
        return $('mincam-range');
      },
      '1080p': () => {
        st.size = '1080p';
        st.cameras = 1;
        st.images = 1;
        st.sort = { key: 'maxcams', dir: 'desc' };
        return $('size-buttons').querySelector('[data-value="1080p"]');
      },
      quant: () => {
        st.filters = emptyFilters();
        st.filters.models = quantPair ? [quantPair.model] : findModel(SEED_QUANT.model);
        st.filters.devices = quantPair ? [quantPair.device] : exactOr(known.devices, SEED_QUANT.device, /AGX Orin/i);
        st.cameras = 1;
        st.sort = { key: 'quant', dir: 'asc' };
        return $('camera-buttons').querySelector('button');
      },
      engine: () => {
        st.filters = emptyFilters();
        st.filters.models = enginePair ? [enginePair.model] : findModel(SEED_ENGINE.model);
        st.filters.devices = enginePair ? [enginePair.device] : exactOr(known.devices, SEED_ENGINE.device, /RTX PRO 6000/i);
        st.cameras = 1;
        st.sort = { key: 'engine', dir: 'asc' };
        return $('camera-buttons').querySelector('button');
      },
      own: () => {
        st.filters = emptyFilters();
        st.cameras = 1;
        st.sort = { key: 'maxcams', dir: 'desc' };
        return $('f-device').querySelector('input');
      },
    };
    document.addEventListener('click', (e) => {
      const b = e.target.closest('.preset[data-preset]');
      if (!b) return;
      e.preventDefault();
      const focus = presets[b.dataset.preset]();
      syncControls();
      render();
      if (focus) {
        focus.scrollIntoView({ block: 'center' });
        focus.focus({ preventScroll: true });
      }
    });
  }

  // syncControls writes the state into the inputs (after the URL, a preset
  // or Clear filters changed it).
  function syncControls() {
    for (const key of Object.keys(chipGroups)) {
      st.filters[key] = st.filters[key].filter((v) => chipGroups[key].has(v));
      const on = new Set(st.filters[key]);
      for (const [v, input] of chipGroups[key]) {
        input.checked = on.has(v);
        input.parentElement.classList.toggle('on', input.checked);
      }
    }
    const rtIdx = RT_STOPS.indexOf(st.filters.rtMax);
    $('rt-range').value = String(rtIdx < 0 ? RT_STOPS.length - 1 : rtIdx);
    let mcIdx = minCamStops.indexOf(st.filters.minCams);
    if (mcIdx < 0) { mcIdx = 0; st.filters.minCams = 0; }
    $('mincam-range').value = String(mcIdx);
    $('target-number').value = String(st.target);
    $('maxw').value = st.filters.maxW == null ? '' : String(st.filters.maxW);
    for (const field of Object.keys(COST_FIELDS)) $(`cost-${field}`).value = String(st.cost[field]);
    $('cost-error').hidden = true;
    $('target-range').value = String(Math.min(10, st.target));
    if (!sizes.includes(st.size)) st.size = defaultState().size;
    if (!intervals.includes(st.interval)) st.interval = 0;
  }

  // ---- rendering (every change) ----------------------------------------
  function paintButtons(sel) {
    const at = (size, images) => avail.get(`${size}|${images}|${sel.interval}`) || [];
    const clock = sel.interval > 0 ? ` ${intervalWords(sel.interval)}` : '';
    for (const b of $('size-buttons').children) {
      const s = b.dataset.value;
      setDimmed(b, at(s, sel.images).length === 0, `No row was measured at ${s}${sel.images > 1 ? ` with ${sel.images} images per camera` : ''}${clock}`);
      b.setAttribute('aria-pressed', String(s === sel.size));
    }
    // The Cameras selector picks rows, so it shows what was measured at one
    // image whatever the image count.
    const camsHere = at(sel.size, 1);
    for (const b of $('camera-buttons').children) {
      const c = Number(b.dataset.value);
      setDimmed(b, !camsHere.includes(c), `No row was measured with ${plural(c, 'camera', 'cameras')} at ${sel.size}${clock}`);
      b.setAttribute('aria-pressed', String(c === sel.rowCameras));
    }
    for (const b of $('image-buttons').children) {
      const n = Number(b.dataset.value);
      setDimmed(b, at(sel.size, n).length === 0, `No row was measured with ${plural(n, 'image', 'images')} per camera at ${sel.size}${clock}`);
      b.setAttribute('aria-pressed', String(n === sel.images));
    }
    for (const b of $('pacing-buttons').children) {
      const t = Number(b.dataset.value);
      setDimmed(b, (avail.get(`${sel.size}|1|${t}`) || []).length === 0, `No row was measured at ${sel.size} ${intervalWords(t)}`);
      b.setAttribute('aria-pressed', String(t === sel.interval));
    }
    for (const b of $('stat-buttons').children) b.setAttribute('aria-pressed', String(b.dataset.value === sel.statistic));
    const note = $('cam-note');
    const notes = [];
    if (sel.rowCameras !== st.cameras && camsHere.length) notes.push(`${sel.size} was not measured with ${st.cameras} cameras${clock}, so the table shows the rows measured with ${plural(sel.rowCameras, 'camera', 'cameras')}.`);
    if (sel.cameras !== sel.rowCameras) notes.push(`Several images per request were measured with one camera only, so response time, Max Cameras and PASS/FAIL are read at ${plural(sel.cameras, 'camera', 'cameras')}; the rows stay those measured with ${plural(sel.rowCameras, 'camera', 'cameras')}.`);
    if (sel.interval > 0 && st.images > 1) notes.push('Cameras on a frame clock were measured with one image per request, so the table is read at one image.');
    note.hidden = notes.length === 0;
    if (notes.length) setText(note, notes.join(' '));
    setText($('rt-out'), st.filters.rtMax == null ? 'any' : `${st.filters.rtMax} s`);
    setText($('mincam-out'), st.filters.minCams > 0 ? String(st.filters.minCams) : 'any');
  }

  function setDimmed(b, dim, why) {
    if (b.disabled !== dim) {
      b.disabled = dim;
      if (dim) { b.setAttribute('aria-disabled', 'true'); b.title = why; } else { b.removeAttribute('aria-disabled'); b.removeAttribute('title'); }
    } else if (dim && b.title !== why) b.title = why;
  }

  function paintRow(it) {
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
    const cls = `row ${v.result == null ? 'nodata' : v.result ? 'pass' : 'fail'}${it === openItem ? ' open' : ''}`;
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

  function render() {
    const t = performance.now();
    const sel = selection();
    let measuredHere = 0;
    let simShown = 0;
    const next = [];
    const key = st.sort && st.sort.key;
    for (const it of items) {
      const here = rowMeasuredAt(it.row, sel.size, sel.rowCameras, sel.interval);
      it.view = rowView(it.row, sel);
      it.shown = here && matchesFilters(it.row, it.view, st.filters);
      if (here) measuredHere++;
      if (it.shown) {
        if (it.row.simulated) simShown++;
        if (key) it.sortKey = sortValue(it.row, it.view, key, ranks);
        next.push(it);
      }
    }
    if (key) next.sort((a, b) => compareKeyed(a, b, st.sort.dir));
    matched = next;
    if (openItem && !openItem.shown) collapse();
    if (st.open && itemById.has(st.open)) {
      const at = matched.indexOf(itemById.get(st.open));
      if (at >= limit) limit = at + 1;
    }
    display();
    paintButtons(sel);
    paintHeader();
    paintCount(sel, matched.length, measuredHere, simShown);
    if (!openItem && st.open && itemById.has(st.open) && itemById.get(st.open).shown) expand(itemById.get(st.open));
    else if (openItem) paintDetail(openItem, sel);
    writeURL();
    perf.lastRenderMs = performance.now() - t;
  }

  // display puts the first `limit` matched rows in the table; the others are
  // not in the document at all, so they cost no style or layout.
  function display() {
    const rows = matched.length > limit ? matched.slice(0, limit) : matched;
    for (const it of rows) paintRow(it);
    let same = rows.length === displayed.length;
    for (let i = 0; same && i < rows.length; i++) same = rows[i] === displayed[i];
    if (!same) {
      const frag = document.createDocumentFragment();
      for (const it of rows) {
        frag.append(it.tr);
        if (it.detail) frag.append(it.detail.tr);
      }
      tbody.replaceChildren(frag);
      displayed = rows;
    }
    const more = $('more');
    const rest = matched.length - rows.length;
    more.hidden = rest <= 0;
    if (rest > 0) setText($('more-text'), `Showing the first ${rows.length} of ${matched.length} rows.`);
  }

  function showMore(n) {
    limit = Math.max(PAGE_ROWS, displayed.length + n);
    display();
  }

  function paintHeader() {
    for (const th of document.querySelectorAll('#table thead th')) {
      const s = st.sort && st.sort.key === th.dataset.key ? (st.sort.dir === 'asc' ? 'ascending' : 'descending') : 'none';
      if (th.getAttribute('aria-sort') !== s) th.setAttribute('aria-sort', s);
    }
  }

  function paintCount(sel, shown, measuredHere, simShown) {
    const total = items.length;
    const clock = sel.interval > 0 ? ` ${intervalWords(sel.interval)}` : '';
    let s = `${shown} of ${total} rows`;
    if (measuredHere < total) s += ` · ${total - measuredHere} not measured at ${sel.size} with ${plural(sel.rowCameras, 'camera', 'cameras')}${clock}`;
    setText($('count'), s);
    let reading = `Read at ${sel.size}, ${plural(sel.cameras, 'camera', 'cameras')}, ${plural(sel.images, 'image', 'images')} per camera, target ${sel.target} s`;
    if (sel.interval > 0) reading += `, one frame every ${sel.interval} s per camera`;
    if (sel.statistic !== 'mean') reading += `, judged by ${sel.statistic}`;
    setText($('reading'), `${reading}.`);
    // The response time shown is the one the statistic judges.
    setText($('rt-head'), sel.statistic === 'mean' ? 'Response time (s)' : `Response time ${sel.statistic} (s)`);
    setText($('cost-head'), `Cost per camera per month (${st.cost.currency})`);
    const empty = $('empty');
    empty.hidden = shown > 0;
    if (shown === 0) {
      setText($('empty-text'), total === 0 ? 'No results yet: run a benchmark or import results, then reload this page.' : filtersActive(st.filters) && measuredHere > 0
        ? 'No row matches the filters at this selection.'
        : `No row was measured at ${sel.size} with ${plural(sel.rowCameras, 'camera', 'cameras')}${clock}.`);
    }
    $('table').classList.toggle('is-empty', shown === 0);
    const banner = $('sim-banner');
    banner.hidden = simShown === 0;
    if (simShown > 0) {
      setText(banner, `Simulated data: ${simShown} of the ${plural(shown, 'row', 'rows')} shown ${simShown === 1 ? 'comes' : 'come'} from simulated runs, marked SIMULATED. Their numbers come from the simulator, not from measuring real hardware.`);
    }
  }

  function writeURL() {
    const h = encodeState(st);
    const url = h ? `#${h}` : location.pathname + location.search;
    if ((h ? `#${h}` : '') === location.hash) return;
    try { history.replaceState(null, '', url); } catch { /* some file:// contexts refuse; the view still works */ }
  }

  // ---- expanded row -----------------------------------------------------
  function toggleRow(it) {
    if (openItem === it) { collapse(); st.open = null; } else { collapse(); st.open = it.row.id; expand(it); }
    writeURL();
  }

  function collapse() {
    if (!openItem) return;
    const it = openItem;
    if (it.detail.chart) it.detail.chart.destroy();
    it.detail.tr.remove();
    it.detail = null;
    it.cells.toggle.setAttribute('aria-expanded', 'false');
    it.tr.classList.remove('open');
    it.cache.cls = '';
    openItem = null;
  }

  function expand(it) {
    if (!it.tr) buildRow(it);
    openItem = it;
    const r = it.row;
    const td = el('td', { colspan: String(TABLE_COLUMNS) });
    const tr = el('tr', { class: 'detail' }, td);
    const measure = el('section', { class: 'd-measure' });
    const explain = el('section', { class: 'd-explain' });
    const chartBox = el('section', { class: 'd-chart' });
    td.append(el('div', { class: 'd-inner' }, el('div', { class: 'd-grid' }, measure, explain), chartBox, runMeta(r)));
    it.detail = { tr, measure, explain, chartBox, chart: null, canvas: null };
    it.tr.after(tr);
    it.cells.toggle.setAttribute('aria-expanded', 'true');
    it.tr.classList.add('open');
    it.cache.cls = '';
    buildChart(it);
    paintDetail(it, selection());
  }

  function buildChart(it) {
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
    const sel = selection();
    it.detail.chart = drawChart(canvas, r, sizes, sel.target, sel.size, sel.interval, sel.statistic);
    it.detail.chartKey = `${sel.target}|${sel.size}|${sel.interval}|${sel.statistic}`;
  }

  function paintDetail(it, sel) {
    const d = it.detail;
    const mc = it.view.mc;
    const known = mc.known !== false;
    const pts = pointsAt(it.row.points, sel.size, sel.images, sel.interval);
    // Where a level was measured sustained, each says its load: Max
    // Cameras reads the sustained ones.
    const loads = mc.sustained;
    const judged = sel.statistic !== 'mean';
    const paced = sel.interval > 0;
    const rows = pts.map((p) => {
      const ok = known && passes(p, sel.target, sel.statistic);
      const res = !known ? 'n/a' : ok ? 'PASS' : 'FAIL';
      const j = known ? judgedTTFT(p, sel.statistic) : null;
      const cams = el('th', { scope: 'row', class: 'num', text: String(p.cameras) });
      if (p.search) cams.append(el('span', { class: 'searched', text: ' (search)', title: 'A level chosen by the search for the exact Max Cameras' }));
      if (loads) cams.append(el('span', { class: 'load', text: ` ${loadName(p)}` }));
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
        paced ? el('td', { class: `num c-frames${p.frames_dropped ? ' dropped' : ''}`, text: `${p.frames_due || 0} / ${p.frames_sent || 0} / ${p.frames_dropped || 0}` }) : null,
        el('td', {}, el('span', { class: `result ${!known ? 'result-none' : ok ? 'result-pass' : 'result-fail'}`, text: res })));
    });
    const clock = paced ? `, one frame every ${sel.interval} s per camera` : '';
    const head = el('h3', { text: `Measurements at ${sel.size}, ${plural(sel.images, 'image', 'images')} per camera${clock}, against ${sel.target} s${judged ? ` by ${sel.statistic}` : ''}` });
    const cols = ['Cameras', 'Response time (s)', judged ? `${sel.statistic}, all due (s)` : 'p90 (s)', 'TPS', 'Requests'];
    if (paced) cols.push('Frames due / sent / dropped');
    cols.push('Result');
    const body = pts.length
      ? el('table', { class: 'mini' },
        el('thead', {}, el('tr', {}, ...cols.map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, ...rows))
      : el('p', { class: 'hint', text: `Not measured at ${sel.size} with ${plural(sel.images, 'image', 'images')} per camera${clock}.` });
    d.measure.replaceChildren(head, body, ...detailNotes(it.row, sel, mc));
    paintExplanation(d.explain, it.row, sel);
    const key = `${sel.target}|${sel.size}|${sel.interval}|${sel.statistic}`;
    if (d.chart && d.chartKey !== key) {
      d.chart.destroy();
      d.chart = drawChart(d.canvas, it.row, sizes, sel.target, sel.size, sel.interval, sel.statistic);
      d.chartKey = key;
    }
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

  // ---- start --------------------------------------------------------------
  function applyURL() {
    st = decodeState(location.hash, storedCost());
    syncControls();
  }

  function start() {
    const t = performance.now();
    buildSelectors();
    buildFilters();
    buildHeader();
    buildToolbar();
    buildPresets();
    buildRows();
    $('more-button').addEventListener('click', () => showMore(PAGE_ROWS));
    $('all-button').addEventListener('click', () => showMore(matched.length));
    // Scrolling near the end of the table brings the next rows.
    if ('IntersectionObserver' in window) {
      const io = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting) && matched.length > displayed.length) {
          showMore(PAGE_ROWS);
          // Observing afresh reports again if the end is still near (a tall window).
          io.unobserve($('more'));
          io.observe($('more'));
        }
      }, { rootMargin: '600px' });
      io.observe($('more'));
    }
    applyURL();
    tbody.replaceChildren(); // the served page's first rows: the explorer's own replace them
    render();
    document.body.offsetHeight; // include style and layout in the figure
    perf.firstRenderMs = performance.now() - t;
    perf.sinceNavigationMs = performance.now();
    perf.moduleStartMs = startedAt;
    window.addEventListener('hashchange', () => {
      collapse();
      applyURL();
      render();
    });
    const gen = ds.generated ? formatDate(ds.generated) : null;
    setText($('generated'), `${plural(items.length, 'configuration', 'configurations')}${gen && gen !== '—' ? `, data generated ${gen}` : ''}.`);
  }

  return { start, perf, state: () => JSON.parse(JSON.stringify(st)), defaultTarget: DEFAULT_TARGET };
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
