// The explorer's state, shared by its modules as one object (x): what the
// data offers (sizes, camera counts, the values to filter by), the view the
// reader chose (x.st, kept in the URL's fragment), and which rows are in the
// table. Only the explorer's modules change it.
import { PARAM_BUCKETS, defaultState, decodeState, encodeState, sizesOf, availability, allCameraCounts, intervalsOf, stringRanks, paramBucket, effectiveCameras } from './logic.js';
import { $ } from './dom.js';
import { storedCost } from './cost.js';
import { PAGE_ROWS } from './table.js';

export function explorerState(ds) {
  const cameraCounts = allCameraCounts(ds.rows);
  const items = ds.rows.map((row, index) => ({ row, index, view: null, tr: null, cells: null, shown: false, detail: null }));
  return {
    ds,
    sizes: sizesOf(ds),
    avail: availability(ds.rows),
    cameraCounts,
    intervals: intervalsOf(ds.rows),
    minCamStops: [0, ...cameraCounts],
    ranks: stringRanks(ds.rows),
    known: knownValues(ds.rows),
    perf: { firstRenderMs: null, sinceNavigationMs: null, lastRenderMs: null, rows: ds.rows.length },
    tbody: $('tbody'),
    items,
    itemById: new Map(items.map((it) => [it.row.id, it])),
    chipGroups: {}, // filter key -> (value -> checkbox)
    st: defaultState(),
    displayed: [], // the items whose rows are in the table, in order
    matched: [], // every item shown at the selection and filters, in order
    limit: PAGE_ROWS,
    openItem: null,
    // Set by the page: draw the view afresh, and write the state into the inputs.
    render: null,
    sync: null,
  };
}

// knownValues are the values each filter offers, in the order shown.
function knownValues(rows) {
  return {
    devices: uniqueSorted(rows.map((r) => r.device)),
    engines: uniqueSorted(rows.map((r) => r.engine)),
    quants: uniqueSorted(rows.map((r) => r.quantization)),
    models: uniqueSorted(rows.map((r) => r.model)),
    params: PARAM_BUCKETS.filter((b) => rows.some((r) => paramBucket(r.params_b) === b.id)).map((b) => b.id),
  };
}

function uniqueSorted(a) {
  return [...new Set(a.filter((v) => v))].sort((p, q) => p.localeCompare(q, 'en', { numeric: true }));
}

// selection is where the view reads the rows. rowCameras picks the rows and
// follows the Cameras selector whatever the image count (Images per Camera
// is an assumption that leaves the rows in place); cameras is where the
// figures are read, which is 1 with 3 or 5 images because only one camera
// was measured with several images. On a frame clock only one image per
// request was measured, so it is read there.
export function selection(x) {
  const st = x.st;
  const interval = st.interval;
  const images = interval > 0 ? 1 : st.images;
  return {
    size: st.size,
    images,
    cameras: effectiveCameras(x.avail, st.size, images, st.cameras, interval),
    rowCameras: effectiveCameras(x.avail, st.size, 1, st.cameras, interval),
    target: st.target,
    interval,
    statistic: st.statistic,
    cost: st.cost,
  };
}

// readURL takes the view from the URL's fragment, and the cost inputs the
// fragment does not name from the browser's storage.
export function readURL(x) {
  x.st = decodeState(location.hash, storedCost());
}

export function writeURL(x) {
  const h = encodeState(x.st);
  const url = h ? `#${h}` : location.pathname + location.search;
  if ((h ? `#${h}` : '') === location.hash) return;
  try { history.replaceState(null, '', url); } catch { /* some file:// contexts refuse; the view still works */ }
}
