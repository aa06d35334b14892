// Pure functions of the explorer: Max Cameras, the row view at a selection,
// filters, sorting, the URL form of the view and CSV. No DOM here, so the
// browser test can import this module and check it against the shared
// vectors (explorer/testdata/maxcameras_vectors.json) that also check Go.
//
// Export bundling concatenates the modules, so every top-level name in every
// module must be unique and imports must stay one per line.

export const STANDARD_SIZES = ['480p', '720p', '1080p', '2K'];
export const IMAGE_COUNTS = [1, 3, 5];
// The statistics a level can be judged by (protocol.Statistic*); the mean
// is the published method's.
export const STATISTICS = ['mean', 'p90', 'p95'];
export const DEFAULT_TARGET = 3;
export const DEFAULT_SIZE = '720p';

// Response-time slider stops in seconds; null (the last stop) means any.
export const RT_STOPS = [0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 30, null];

export const PARAM_BUCKETS = [
  { id: 'lt3', label: 'under 3B', min: 0, max: 3 },
  { id: '3-5', label: '3–5B', min: 3, max: 5 },
  { id: '5-10', label: '5–10B', min: 5, max: 10 },
  { id: '10-20', label: '10–20B', min: 10, max: 20 },
  { id: '20+', label: '20B and more', min: 20, max: Infinity },
];

export const SORT_KEYS = ['model', 'params', 'quant', 'engine', 'device', 'rt', 'tps', 'maxcams', 'result', 'power', 'jpa', 'wpc', 'cost'];

// roundSeconds matches explorer.RoundSeconds: a response time is judged at
// the 0.01 s it is shown with, so "3.00" on screen never fails a 3 s target.
export function roundSeconds(s) {
  return Math.round(s * 100) / 100;
}

// intervalOf is a point's frame clock in seconds; 0 (absent) is back to
// back, as published.
export function intervalOf(p) {
  return p.frame_interval_sec || 0;
}

// nearestRank matches protocol.NearestRank: the 1-based rank of the p-th
// percentile of n values.
export function nearestRank(p, n) {
  return Math.max(1, Math.floor((p * n + 99) / 100));
}

// judgedTTFT matches protocol.Judgement.Judged: the response time the
// statistic reads, or null when there is none (no request completed, the
// percentile falls on an answer that never started, no tail recorded).
export function judgedTTFT(p, statistic) {
  if (statistic === 'p90' || statistic === 'p95') {
    const t = p.ttft_tail;
    const pc = statistic === 'p90' ? 90 : 95;
    if (!t || t.due < 1 || nearestRank(pc, t.due) > t.due - t.unstarted) return null;
    return pc === 90 ? t.p90 : t.p95;
  }
  return p.completed > 0 ? p.ttft : null;
}

// passes matches explorer.PassesJudged (protocol.Judgement.Passes): by the
// mean a level where every request failed was tested and fails, a failed
// request is otherwise left out; by p90/p95 it counts as never started; a
// paced level with a dropped frame or a failed request fails; exactly on
// the target passes.
export function passes(p, target, statistic = 'mean') {
  if (intervalOf(p) > 0 && ((p.frames_dropped || 0) > 0 || p.failed > 0)) return false;
  const v = judgedTTFT(p, statistic);
  return v != null && roundSeconds(v) <= target;
}

// sustainedAt says whether any level at size, images and interval was
// measured with cameras that keep sending.
export function sustainedAt(points, size, images, interval) {
  return points.some((p) => p.size === size && p.images === images && intervalOf(p) === interval && p.load === 'sustained');
}

// judgedAt matches explorer's judgedAt: the levels Max Cameras reads, the
// sustained ones where there are any, else all.
function judgedAt(points, size, images, interval) {
  const sustained = sustainedAt(points, size, images, interval);
  return (p) => p.size === size && p.images === images && intervalOf(p) === interval && (!sustained || p.load === 'sustained');
}

// judgeable matches explorer.Judgeable: a percentile needs every level's
// tail, which a published row imported with its means only lacks.
export function judgeable(points, size, images, interval, statistic) {
  if (statistic !== 'p90' && statistic !== 'p95') return true;
  const judged = judgedAt(points, size, images, interval);
  return !points.some((p) => judged(p) && !p.ttft_tail);
}

// maxCameras matches explorer.MaxCamerasJudged: the highest measured number
// of cameras at size, images and frame interval (opts.interval, 0 back to
// back) that keeps up by opts.statistic (the mean by default), plus when it
// is the highest tested; nothing interpolated. measured says whether the
// selection was measured, known whether the statistic can be judged there
// (when not, max is 0), search whether a search chose levels there and
// exact whether it measured the level above max too.
export function maxCameras(points, size, images, target, opts = {}) {
  const interval = opts.interval || 0;
  const statistic = opts.statistic || 'mean';
  const known = judgeable(points, size, images, interval, statistic);
  let max = 0;
  let highest = 0;
  let measured = false;
  let search = false;
  const cams = new Set();
  const judged = judgedAt(points, size, images, interval);
  for (const p of points) {
    if (!judged(p)) continue;
    measured = true;
    cams.add(p.cameras);
    if (p.search) search = true;
    if (p.cameras > highest) highest = p.cameras;
    if (known && passes(p, target, statistic) && p.cameras > max) max = p.cameras;
  }
  const sustained = sustainedAt(points, size, images, interval);
  return { max, plus: max > 0 && max === highest, measured, known, search, exact: search && max > 0 && cams.has(max + 1), sustained };
}

// loadName matches protocol.ComboKey.LoadName: how a back-to-back level's
// cameras sent, said beside its figures.
export function loadName(p) {
  if (intervalOf(p) > 0) return '';
  return p.load === 'sustained' ? 'sustained' : 'one round, as published';
}

export function maxCamerasLabel(mc) {
  if (!mc.measured) return '—';
  if (mc.known === false) return 'n/a';
  return mc.plus ? `${mc.max}+` : String(mc.max);
}

// maxCamerasTitle says, for a Max Cameras a search chose, what makes it
// exact; '' otherwise.
export function maxCamerasTitle(mc) {
  if (!mc.measured || mc.known === false || !mc.search) return '';
  const load = mc.sustained ? '; sustained, cameras that keep sending' : '; one round per level, as published';
  if (mc.exact) return `Exact: a search measured ${mc.max + 1} cameras too, which did not keep up${load}`;
  if (mc.plus) return `A search measured up to its ceiling and the highest number still kept up${load}`;
  return `A search measured levels here; the level above this one was not measured at this target${load}`;
}

// findPoint matches explorer.FindPointAt: the sustained level where one
// was measured both ways.
export function findPoint(points, size, images, cameras, interval = 0) {
  let found = null;
  for (const p of points) {
    if (p.size === size && p.images === images && p.cameras === cameras && intervalOf(p) === interval && (!found || p.load === 'sustained')) found = p;
  }
  return found;
}

// pointsAt lists the points at size, images and frame interval by number of
// cameras, one round before sustained at the same number.
export function pointsAt(points, size, images, interval = 0) {
  const rank = (p) => (p.load === 'sustained' ? 1 : 0);
  return points.filter((p) => p.size === size && p.images === images && intervalOf(p) === interval).sort((a, b) => a.cameras - b.cameras || rank(a) - rank(b));
}

// formatParams follows the seed: "2.4B", "8.0B", "16B", "31B".
export function formatParams(b) {
  if (!(b > 0)) return '—';
  return b >= 10 ? `${Math.round(b)}B` : `${b.toFixed(1)}B`;
}

export function formatSeconds(s) {
  return s == null || !isFinite(s) ? '—' : roundSeconds(s).toFixed(2);
}

export function formatTPS(t) {
  return t == null || !isFinite(t) || t <= 0 ? '—' : t.toFixed(1);
}

// plainSeconds writes seconds as the explanations do (explorer.FormatSeconds):
// to 0.01 s, trailing zeros trimmed ("3", "2.5").
export function plainSeconds(s) {
  return String(roundSeconds(s));
}

// intervalWords: "every 5 s"; "back to back" for 0.
export function intervalWords(t) {
  return t > 0 ? `every ${t} s` : 'back to back';
}

// sizesOf lists the image sizes: the standard four in their order, then any
// other size the data carries.
export function sizesOf(dataset) {
  const out = STANDARD_SIZES.slice();
  for (const s of dataset.sizes || []) if (!out.includes(s)) out.push(s);
  for (const r of dataset.rows || []) for (const p of r.points || []) if (!out.includes(p.size)) out.push(p.size);
  return out;
}

// availability maps "size|images|interval" to the sorted numbers of cameras
// measured in any row; it decides which selector buttons are dimmed. Levels a
// search chose are left out: they are Max Cameras' business, and every
// row's own, so they would crowd the Cameras selector.
export function availability(rows) {
  const m = new Map();
  for (const r of rows) {
    for (const p of r.points) {
      if (p.search) continue;
      const k = `${p.size}|${p.images}|${intervalOf(p)}`;
      let s = m.get(k);
      if (!s) m.set(k, (s = new Set()));
      s.add(p.cameras);
    }
  }
  const out = new Map();
  for (const [k, s] of m) out.set(k, [...s].sort((a, b) => a - b));
  return out;
}

export function allCameraCounts(rows) {
  const s = new Set();
  for (const r of rows) for (const p of r.points) if (!p.search) s.add(p.cameras);
  return [...s].sort((a, b) => a - b);
}

// intervalsOf lists the frame clocks measured in any row, shortest first.
export function intervalsOf(rows) {
  const s = new Set();
  for (const r of rows) for (const p of r.points) if (intervalOf(p) > 0) s.add(intervalOf(p));
  return [...s].sort((a, b) => a - b);
}

// effectiveCameras is the number of cameras measured at size and images
// nearest the one asked for: that one when it was measured, else the nearest
// lower measured number (else the lowest). The page picks its rows with it at
// one image, and reads the figures with it at the selected image count: with
// 3 or 5 images only one camera was measured, so they are read at 1.
export function effectiveCameras(avail, size, images, wanted, interval = 0) {
  const list = avail.get(`${size}|${images}|${interval}`) || [];
  if (list.length === 0 || list.includes(wanted)) return wanted;
  let best = null;
  for (const c of list) if (c <= wanted) best = c;
  return best == null ? list[0] : best;
}

// rowMeasuredAt decides whether a row is shown at the selected size and
// cameras. The image count is deliberately not part of it: Images per Camera
// is an assumption, and changing it leaves the rows in place.
export function rowMeasuredAt(row, size, cameras, interval = 0) {
  for (const p of row.points) if (p.size === size && p.cameras === cameras && intervalOf(p) === interval) return true;
  return false;
}

// rowView is what the table shows for a row at a selection: the response
// time the statistic reads, Max Cameras, PASS/FAIL (null: not measured or
// not judged) and, in why, what the cells cannot say.
export function rowView(row, sel) {
  const interval = sel.interval || 0;
  const statistic = sel.statistic || 'mean';
  const p = findPoint(row.points, sel.size, sel.images, sel.cameras, interval);
  const mc = maxCameras(row.points, sel.size, sel.images, sel.target, { interval, statistic });
  const unknown = !!p && !mc.known;
  const allFailed = !!p && p.completed === 0;
  return {
    rt: p && !unknown ? judgedTTFT(p, statistic) : null,
    tps: p && p.completed > 0 && !p.tps_na ? p.tps : null,
    tpsNA: !!p && p.completed > 0 && !!p.tps_na,
    mc,
    result: p && !unknown ? passes(p, sel.target, statistic) : null, // true PASS, false FAIL, null not measured or judged
    unknown,
    allFailed,
    framesDue: p && interval > 0 ? p.frames_due || 0 : null,
    framesDropped: p && interval > 0 ? p.frames_dropped || 0 : null,
    why: p ? whyText(p, statistic, unknown) : '',
    ...energyView(row.points, sel, mc, interval),
  };
}

// energyView is a row's draw at Max Cameras for rowView: energy (null where
// not known), noPower (a level kept up but has no power samples: "n/a",
// never 0 W) and the cost per camera per month at sel.cost.
export function energyView(points, sel, mc, interval) {
  const energy = mc.known !== false ? energyAt(points, sel.size, sel.images, interval, mc.max) : null;
  const noPower = !energy && mc.measured && mc.known !== false && mc.max > 0;
  const c = sel.cost;
  const cost = energy && c ? costPerCameraMonth(c.price, c.months, c.kwh, energy.powerW, energy.cameras) : null;
  return { energy, noPower, cost };
}

// whyText is what a row's cells cannot say at a point: that every request
// failed, that the statistic is not known, that frames were dropped, or
// that the percentile falls on an answer that never started.
export function whyText(p, statistic, unknown) {
  if (p.completed === 0) return failureText(p);
  if (unknown) return `${statistic} n/a: published with means only`;
  if ((p.frames_dropped || 0) > 0) return `${p.frames_dropped} of ${p.frames_due} frames dropped`;
  if (statistic !== 'mean' && judgedTTFT(p, statistic) == null) {
    const t = p.ttft_tail;
    return `the ${statistic} answer never started: ${t.unstarted} of ${t.due} failed or dropped`;
  }
  return '';
}

// failureText says why a point has no figures: every request failed, and
// the error most of them failed with.
export function failureText(p) {
  const n = p.failed === 1 ? 'the one request' : `all ${p.failed} requests`;
  return `${n} failed${p.error ? `: ${p.error}` : ''}`;
}

export function paramBucket(b) {
  for (const k of PARAM_BUCKETS) if (b >= k.min && b < k.max) return k.id;
  return null;
}

// matchesFilters applies the filters; they only show or hide rows.
export function matchesFilters(row, view, f) {
  if (f.devices.length && !f.devices.includes(row.device)) return false;
  if (f.models.length && !f.models.includes(row.model)) return false;
  if (f.quants.length && !f.quants.includes(row.quantization)) return false;
  if (f.engines.length && !f.engines.includes(row.engine)) return false;
  if (f.params.length && !f.params.includes(paramBucket(row.params_b))) return false;
  if (f.rtMax != null && (view.rt == null || roundSeconds(view.rt) > f.rtMax)) return false;
  if (f.minCams > 0 && view.mc.max < f.minCams) return false;
  // A row whose draw is not known cannot be said to stay within a budget.
  if (f.maxW != null && (!view.energy || roundTenth(view.energy.powerW) > f.maxW)) return false;
  return true;
}

export function emptyFilters() {
  return { devices: [], models: [], quants: [], engines: [], params: [], rtMax: null, minCams: 0, maxW: null };
}

export function filtersActive(f) {
  return f.devices.length + f.models.length + f.quants.length + f.engines.length + f.params.length > 0 ||
    f.rtMax != null || f.minCams > 0 || f.maxW != null;
}

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

// stringRanks numbers the values of each text column in collation order once,
// so that sorting compares numbers rather than strings.
export function stringRanks(rows) {
  const cols = { model: 'model', quant: 'quantization', engine: 'engine', device: 'device' };
  const out = {};
  for (const [key, field] of Object.entries(cols)) {
    const values = [...new Set(rows.map((r) => r[field] || ''))].sort(collator.compare);
    out[key] = new Map(values.map((v, i) => [v, i]));
  }
  return out;
}

// sortValue is the number a row sorts by in a column (null when missing).
export function sortValue(row, view, key, ranks) {
  switch (key) {
    case 'model': return ranks.model.get(row.model || '');
    case 'quant': return ranks.quant.get(row.quantization || '');
    case 'engine': return ranks.engine.get(row.engine || '');
    case 'device': return ranks.device.get(row.device || '');
    case 'params': return row.params_b > 0 ? row.params_b : null;
    case 'rt': return view.rt;
    case 'tps': return view.tps;
    // A "+" sorts above the same number without it: its limit was not reached.
    case 'maxcams': return view.mc.measured && view.mc.known !== false ? view.mc.max + (view.mc.plus ? 0.5 : 0) : null;
    case 'result': return view.result == null ? null : view.result ? 1 : 0;
    case 'power': return view.energy ? view.energy.powerW : null;
    case 'jpa': return view.energy ? view.energy.joules : null;
    case 'wpc': return view.energy ? view.energy.wattsPerCamera : null;
    case 'cost': return view.cost;
  }
  return null;
}

// compareKeyed orders items carrying {sortKey, index}: missing values go
// last in both directions, and ties keep the dataset order (a stable sort).
export function compareKeyed(a, b, dir) {
  const va = a.sortKey;
  const vb = b.sortKey;
  if (va == null || vb == null) {
    if (va == null && vb == null) return a.index - b.index;
    return va == null ? 1 : -1;
  }
  const c = dir === 'desc' ? vb - va : va - vb;
  return c || a.index - b.index;
}

// defaultState is the view a plain link opens.
export function defaultState() {
  return {
    size: DEFAULT_SIZE,
    cameras: 1,
    images: 1,
    target: DEFAULT_TARGET,
    interval: 0, // seconds between a camera's frames; 0 back to back
    statistic: 'mean',
    filters: emptyFilters(),
    sort: null, // {key, dir}
    open: null, // row id
    cost: { ...COST_DEFAULTS },
  };
}

// safeDecode is decodeURIComponent that gives fallback for a malformed
// escape ("100%"), so one bad character in a shared link cannot stop the page.
export function safeDecode(v, fallback) {
  try {
    return decodeURIComponent(v);
  } catch {
    return fallback;
  }
}

// splitList drops an item it cannot decode and keeps the others.
function splitList(v) {
  return v ? v.split(',').map((s) => safeDecode(s, '')).filter((s) => s !== '') : [];
}

function joinList(a) {
  return a.map((s) => encodeURIComponent(s)).join(',');
}

// encodeState writes the view as a URL hash ("size=1080p&cam=4&…"); only what
// differs from the default is written, so plain links stay short.
export function encodeState(st) {
  const d = defaultState();
  const parts = [];
  const add = (k, v) => parts.push(`${k}=${v}`);
  if (st.size !== d.size) add('size', encodeURIComponent(st.size));
  if (st.cameras !== d.cameras) add('cam', st.cameras);
  if (st.images !== d.images) add('img', st.images);
  if (st.target !== d.target) add('target', st.target);
  if (st.interval !== d.interval) add('every', st.interval);
  if (st.statistic !== d.statistic) add('stat', st.statistic);
  const f = st.filters;
  if (f.devices.length) add('device', joinList(f.devices));
  if (f.models.length) add('model', joinList(f.models));
  if (f.quants.length) add('quant', joinList(f.quants));
  if (f.engines.length) add('engine', joinList(f.engines));
  if (f.params.length) add('params', joinList(f.params));
  if (f.rtMax != null) add('rt', f.rtMax);
  if (f.minCams > 0) add('mincam', f.minCams);
  if (f.maxW != null) add('maxw', f.maxW);
  if (st.cost.price !== d.cost.price) add('price', st.cost.price);
  if (st.cost.months !== d.cost.months) add('months', st.cost.months);
  if (st.cost.kwh !== d.cost.kwh) add('kwh', st.cost.kwh);
  if (st.cost.currency !== d.cost.currency) add('cur', encodeURIComponent(st.cost.currency));
  if (st.sort) add('sort', `${st.sort.key}.${st.sort.dir}`);
  if (st.open) add('open', encodeURIComponent(st.open));
  return parts.join('&');
}

// decodeState reads a hash written by encodeState; anything it does not
// understand keeps its default, so an old or hand-edited link still opens.
// cost is what the cost inputs start from where the link does not name
// them (what the browser kept).
export function decodeState(hash, cost) {
  const st = defaultState();
  if (cost) st.cost = { ...cost };
  const h = (hash || '').replace(/^#/, '');
  if (!h) return st;
  for (const part of h.split('&')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i);
    const v = part.slice(i + 1);
    const num = Number(v);
    switch (k) {
      case 'size': st.size = safeDecode(v, st.size); break;
      case 'cam': if (Number.isInteger(num) && num > 0) st.cameras = num; break;
      case 'img': if (IMAGE_COUNTS.includes(num)) st.images = num; break;
      case 'target': if (isFinite(num) && num > 0) st.target = num; break;
      case 'every': if (isFinite(num) && num > 0) st.interval = num; break;
      case 'stat': if (STATISTICS.includes(v)) st.statistic = v; break;
      case 'device': st.filters.devices = splitList(v); break;
      case 'model': st.filters.models = splitList(v); break;
      case 'quant': st.filters.quants = splitList(v); break;
      case 'engine': st.filters.engines = splitList(v); break;
      case 'params': st.filters.params = splitList(v).filter((id) => PARAM_BUCKETS.some((b) => b.id === id)); break;
      case 'rt': if (RT_STOPS.includes(num)) st.filters.rtMax = num; break;
      case 'mincam': if (Number.isInteger(num) && num > 0) st.filters.minCams = num; break;
      case 'maxw': if (isFinite(num) && num > 0) st.filters.maxW = num; break;
      case 'price': case 'months': case 'kwh': case 'cur': {
        const field = { price: 'price', months: 'months', kwh: 'kwh', cur: 'currency' }[k];
        const r = parseCostField(field, safeDecode(v, ''));
        if (!r.error) st.cost[field] = r.value;
        break;
      }
      case 'sort': {
        const [key, dir] = v.split('.');
        if (SORT_KEYS.includes(key) && (dir === 'asc' || dir === 'desc')) st.sort = { key, dir };
        break;
      }
      case 'open': st.open = safeDecode(v, null) || null; break;
    }
  }
  return st;
}

// csvText keeps a spreadsheet from running text as a formula: a text cell
// starting with = + - @, tab or CR (a model name from an imported file could
// be "=HYPERLINK(…)") gets a leading apostrophe. Numbers, and text that is a
// plain number such as "-1.50", stay as they are.
export function csvText(v) {
  if (typeof v !== 'string' || !/^[=+\-@\t\r]/.test(v) || /^[+-]?\d+(\.\d+)?$/.test(v)) return v;
  return `'${v}`;
}

function csvField(v) {
  const s = v == null ? '' : String(csvText(v));
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// deviceLabel is the device as a row shows it: with the power setting it
// was measured in ("Jetson Orin NX · 15W"), which is part of the row.
export function deviceLabel(row) {
  return row.power_mode ? `${row.device} · ${row.power_mode}` : row.device;
}

// toCSV writes the rows as shown, in the order shown, with the selection
// they were read at so the file stands on its own. The response time is
// the one the statistic reads; the columns after result say how the
// cameras sent, whether a search made Max Cameras exact and, on a frame
// clock, the frames due and dropped at the selected cameras; the last,
// the power setting the row was measured in (part of the row).
export function toCSV(items, sel) {
  const head = ['model', 'parameters_b', 'quantization', 'engine', 'device', 'simulated', 'image_size', 'cameras',
    'images_per_camera', 'target_s', 'response_time_s', 'tps', 'max_cameras', 'result',
    'frame_interval_s', 'statistic', 'max_cameras_by_search', 'frames_due', 'frames_dropped',
    'power_at_max_w', 'joules_per_answer_at_max', 'above_idle_joules_per_answer_at_max', 'watts_per_camera', 'power_source',
    'cost_per_camera_month', 'currency', 'power_mode'];
  const lines = [head.join(',')];
  for (const { row, view } of items) {
    lines.push([
      row.model, row.params_b, row.quantization, row.engine, row.device, row.simulated ? 'yes' : 'no',
      sel.size, sel.cameras, sel.images, sel.target,
      view.rt == null ? '' : roundSeconds(view.rt).toFixed(2),
      view.tpsNA ? 'n/a' : view.tps == null ? '' : view.tps.toFixed(1),
      maxCamerasLabel(view.mc),
      view.unknown ? 'n/a' : view.result == null ? '' : view.result ? 'PASS' : 'FAIL',
      sel.interval || 0, sel.statistic || 'mean', view.mc.search ? 'yes' : 'no',
      view.framesDue == null ? '' : view.framesDue, view.framesDropped == null ? '' : view.framesDropped,
      ...energyCSV(view, sel), row.power_mode || '',
    ].map(csvField).join(','));
  }
  return lines.join('\r\n') + '\r\n';
}

// energyCSV is toCSV's last columns: the draw at Max Cameras, "n/a" where a
// level kept up without power samples, and the cost at the inputs.
function energyCSV(view, sel) {
  const e = view.energy;
  const none = view.noPower ? 'n/a' : '';
  const fig = (v) => (v == null ? none : v);
  return [e ? e.powerW : none, e ? fig(e.joules) : none, e ? fig(e.aboveIdle) : none, e ? e.wattsPerCamera : none,
    e ? e.source : none, view.cost == null ? none : view.cost.toFixed(2), sel.cost ? sel.cost.currency : ''];
}

// ---- power and cost ----------------------------------------------------
// vlmfleet ships no prices: these are example inputs, shown in the page's
// fields for the user to replace.
export const COST_DEFAULTS = { price: 1000, months: 36, kwh: 0.3, currency: 'USD' };
// HOURS_PER_MONTH is 365 days × 24 h / 12.
export const HOURS_PER_MONTH = 730;

function roundTenth(v) {
  return Math.round(v * 10) / 10;
}

// energyAt matches explorer.EnergyAt: the draw at Max Cameras (max), or
// null where no level kept up or that level has no power samples.
export function energyAt(points, size, images, interval, max) {
  if (!(max >= 1)) return null;
  const p = findPoint(points, size, images, max, interval);
  if (!p || p.power_w == null) return null;
  return { cameras: max, powerW: p.power_w, joules: p.joules_per_answer ?? null, aboveIdle: p.above_idle_joules_per_answer ?? null,
    wattsPerCamera: p.power_w / max, source: p.power_source || '' };
}

// costPerCameraMonth is the device written off over months plus the energy
// at Max Cameras for a month, shared by the cameras:
// (price / months + W × 730 h × kWh price / 1000) / cameras.
export function costPerCameraMonth(price, months, kwh, powerW, cameras) {
  if (!(cameras >= 1) || !(months > 0) || powerW == null) return null;
  const cost = (price / months + (powerW * HOURS_PER_MONTH * kwh) / 1000) / cameras;
  return isFinite(cost) ? cost : null;
}

export const COST_FIELDS = {
  price: 'Device price',
  months: 'Written off over (months)',
  kwh: 'Price of a kWh',
  currency: 'Currency',
};

// COST_RANGES are explorer.Cost.Check's: wide enough for any device and
// tariff in any currency, narrow enough that the cost is finite.
export const COST_RANGES = {
  price: { lo: 0, hi: 1e12, want: 'give 0 up to 1e12' },
  months: { lo: 0.1, hi: 1200, want: 'give 0.1 to 1200 months (three days to a century)' },
  kwh: { lo: 0, hi: 1e6, want: 'give 0 up to 1e6' },
};

// parseCostField reads one cost input: { value } or { error } naming the
// field and what it takes.
export function parseCostField(field, raw) {
  const s = String(raw).trim();
  const name = COST_FIELDS[field];
  if (field === 'currency') {
    if (s === '' || s.length > 12) return { error: `${name}: “${s}” — give a name of 1 to 12 characters (USD, EUR, €)` };
    return { value: s };
  }
  const n = s === '' ? NaN : Number(s);
  if (!isFinite(n)) return { error: `${name}: “${s}” is not a number` };
  const r = COST_RANGES[field];
  if (!(n >= r.lo && n <= r.hi)) return { error: `${name}: ${s} — ${r.want}` };
  return { value: n };
}

// formatWatts, formatJoules: one decimal, as the sentence writes them.
export function formatWatts(v) {
  return v == null || !isFinite(v) ? '—' : v.toFixed(1);
}

// energySentence matches explorer.EnergySentence: the draw at Max Cameras
// under the statistic and target, or '' where it is not known.
export function energySentence(points, size, images, interval, statistic, target) {
  const mc = maxCameras(points, size, images, target, { interval, statistic });
  if (!mc.known) return '';
  const e = energyAt(points, size, images, interval, mc.max);
  if (!e) return '';
  let s = `At ${mc.max === 1 ? 'one camera' : `${mc.max} cameras`} it draws ${e.powerW.toFixed(1)} W`;
  if (e.source === 'gpu') s += ' (the GPU alone)';
  if (e.joules != null) {
    s += `, ${e.joules.toFixed(1)} J per answer`;
    if (e.aboveIdle != null) s += ` (${e.aboveIdle.toFixed(1)} J above idle)`;
  }
  return `${s}.`;
}

// ---- the sentences -----------------------------------------------------
// explanationAt is a row's explanation (explorer.Explain, written at 720p,
// one image per camera, by the mean at 3 s) judged by statistic and target
// instead, as explorer.ExplainAt writes it: each sentence that gives Max
// Cameras, or the draw there, is written again as the view judges; the
// others give means, and say so by a percentile (averaged).
export function explanationAt(row, statistic, target) {
  const lines = row.explanation || [];
  if (statistic === 'mean' && target === DEFAULT_TARGET) return lines;
  const pts = row.points;
  const clocks = [0, ...intervalsOf([row])];
  return lines.map((line) => {
    for (const t of clocks) {
      if (line === judgedSentence(pts, DEFAULT_SIZE, 1, t, 'mean', DEFAULT_TARGET)) return judgedSentence(pts, DEFAULT_SIZE, 1, t, statistic, target);
    }
    if (line === energySentence(pts, DEFAULT_SIZE, 1, 0, 'mean', DEFAULT_TARGET)) return energySentence(pts, DEFAULT_SIZE, 1, 0, statistic, target);
    return statistic === 'mean' ? line : averaged(line);
  }).filter(Boolean);
}

// averaged adds "on average" after each response time of a sentence that
// gives means (explorer's averageWords): "after 6.83 s, then writes" and
// "after 9.94 s." are the only places the explanation writes "after N s".
function averaged(line) {
  return line.replace(/ after (\d+(?:\.\d+)?) s(?=, then writes |\.)/g, ' after $1 s on average');
}

// judgedSentence matches explorer.JudgedSentence: Max Cameras at a view in
// the seed's words, so that the expanded row says what the table shows at
// the statistic and frame clock chosen. '' when not measured there.
export function judgedSentence(points, size, images, interval, statistic, target) {
  const mc = maxCameras(points, size, images, target, { interval, statistic });
  if (!mc.measured) return '';
  const within = ` starting within ${plainSeconds(target)} s`;
  const goal = statistic === 'p90' ? `9 of 10 answers${within}` : statistic === 'p95' ? `19 of 20 answers${within}`
    : interval > 0 ? `each answer${within}` : `an answer${within}`;
  const imgs = images === 1 ? 'one image' : `${images} images`;
  const s = interval > 0
    ? `At one frame every ${interval} s per camera (${size}, ${imgs}), `
    : `At ${statistic === 'mean' && target === DEFAULT_TARGET ? 'the default target' : 'a target'} of ${goal} (${size}, ${imgs} per camera), `;
  if (!mc.known) return `${s}it cannot be judged by ${statistic}: the row was published with its means only, not its slow answers.`;
  const exact = mc.exact ? `; with ${mc.max + 1}, also measured, it does not` : '';
  const { max, plus } = mc;
  if (interval > 0) {
    const met = `every frame answered, ${goal}`;
    if (max === 0) return `${s}not even one camera has ${met}.`;
    if (max === 1 && plus) return `${s}it keeps up with one camera, the only number measured: ${met}.`;
    if (max === 1) return `${s}it keeps up with one camera: ${met}${exact}.`;
    if (plus) return `${s}it keeps up with at least ${max} cameras: ${met}, still at the highest number measured, so the real limit is higher.`;
    return `${s}it keeps up with ${max} cameras: ${met}${exact}.`;
  }
  if (max === 0) return `${s}not even one camera is answered in time.`;
  if (max === 1 && plus) return `${s}it keeps up with one camera, the only number measured, so how it copes with several is not known.`;
  if (max === 1) return `${s}it keeps up with one camera at a time${exact}.`;
  if (plus) return `${s}it keeps up with at least ${max} cameras at once: it still met the target at the highest number measured, so the real limit is higher.`;
  return `${s}it keeps up with ${max} cameras at once${exact}.`;
}

// ---- the guide's examples ---------------------------------------------
// The guide and "Where to start" quote figures; they quote this dataset's
// rows, never figures the page does not show. The seed's choice of rows is
// preferred where the dataset has them, so the published page reads as
// published; otherwise another pair of rows is quoted, or the guide says
// plainly that the figure is the published seed's.

// comparisonPair finds rows of one model on one device that differ only in
// `vary` ('quantization' under one engine, or 'engine'): the preferred model and device when
// present, else the group with the most rows (then the first by name).
// Returns { model, device, rows } with the rows sorted by `vary`, or null.
export function comparisonPair(rows, vary, prefer) {
  const groups = new Map();
  for (const r of rows) {
    // Quantizations are compared under one engine; engines differ in
    // their formats too (llama.cpp serves GGUF, vLLM BF16 or FP8).
    // A power setting is part of the row: two settings are never a pair.
    const k = `${r.model}\u0000${r.device}\u0000${r.power_mode || ''}${vary === 'quantization' ? `\u0000${r.engine}` : ''}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  const usable = [];
  for (const g of groups.values()) {
    const values = new Set(g.map((r) => r[vary]));
    if (values.size < 2) continue;
    const byValue = new Map();
    for (const r of g) if (!byValue.has(r[vary])) byValue.set(r[vary], r);
    const picked = [...byValue.values()].sort((a, b) => String(a[vary]).localeCompare(String(b[vary]), 'en')).slice(0, 2);
    usable.push({ model: g[0].model, device: g[0].device, rows: picked, n: g.length });
  }
  if (usable.length === 0) return null;
  const pref = usable.find((u) => prefer && u.model === prefer.model && u.device === prefer.device);
  if (pref) return pref;
  usable.sort((a, b) => b.n - a.n || a.model.localeCompare(b.model, 'en') || a.device.localeCompare(b.device, 'en'));
  return usable[0];
}

// The seed's examples, quoted as the seed's when the dataset lacks them.
export const SEED_QUANT = { model: 'Qwen3-VL-8B-Instruct', device: 'Jetson AGX Orin' };
export const SEED_ENGINE = { model: 'Qwen3-VL-4B-Instruct', device: 'RTX PRO 6000' };
export const SEED_MAXCAMS = { model: 'Cosmos3-Edge', device: 'Jetson AGX Orin' };

// engineExample is the guide's sentence on engines, from the engine pair's
// figures at 720p with one image: one camera, and the most cameras both
// rows measured.
export function engineExample(rows) {
  const seed = 'In the published seed, Qwen3-VL-4B-Instruct on RTX PRO 6000 at 720p starts answering a single camera after 0.25 s under llama.cpp (Q8_0) and 0.16 s under vLLM (BF16); at 16 cameras the gap is 1.09 s against 0.46 s (those rows are not in this table).';
  const pair = comparisonPair(rows, 'engine', SEED_ENGINE);
  if (!pair) return seed;
  const [a, b] = pair.rows;
  const one = (r, n) => findPoint(r.points || [], '720p', 1, n);
  const a1 = one(a, 1);
  const b1 = one(b, 1);
  if (!a1 || !b1 || a1.completed === 0 || b1.completed === 0) return seed;
  let s = `${pair.model} on ${pair.device} at 720p starts answering a single camera after ${formatSeconds(a1.ttft)} s under ${a.engine} (${a.quantization}) and ${formatSeconds(b1.ttft)} s under ${b.engine} (${b.quantization})`;
  const common = pointsAt(a.points || [], '720p', 1).map((p) => p.cameras)
    .filter((n) => n > 1 && (one(b, n) || {}).completed > 0 && (one(a, n) || {}).completed > 0);
  if (common.length > 0) {
    const n = Math.max(...common);
    s += `; at ${n} cameras the gap is ${formatSeconds(one(a, n).ttft)} s against ${formatSeconds(one(b, n).ttft)} s`;
  }
  return `${s}.`;
}

// maxCamerasExample is the guide's sentence on how Max Cameras moves with
// the target: a row (the seed's, else the first) whose Max Cameras at 720p
// with one image is higher at 3 s than at 1 s.
export function maxCamerasExample(rows) {
  const seed = 'It depends on your target and moves with it: in the published seed, at 720p with one image per camera, Cosmos3-Edge on Jetson AGX Orin keeps up with 2 cameras at 1 second and 8 — the highest number measured, so 8+ — at 3 seconds (that row is not in this table).';
  const moves = (r) => {
    const at1 = maxCameras(r.points || [], '720p', 1, 1);
    const at3 = maxCameras(r.points || [], '720p', 1, 3);
    return at1.max > 0 && at3.max > at1.max ? { at1, at3 } : null;
  };
  const candidates = rows.filter((r) => moves(r));
  const row = candidates.find((r) => r.model === SEED_MAXCAMS.model && r.device === SEED_MAXCAMS.device) || candidates[0];
  if (!row) return seed;
  const { at1, at3 } = moves(row);
  const cams = (n) => (n === 1 ? '1 camera' : `${n} cameras`);
  const high = at3.plus ? `${at3.max} — the highest number measured, so ${at3.max}+ —` : `${at3.max}`;
  return `It depends on your target and moves with it: at 720p with one image per camera, ${row.model} on ${row.device} keeps up with ${cams(at1.max)} at 1 second and ${high} at 3 seconds.`;
}
