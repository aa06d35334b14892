// The selectors the figures are read at: image size, cameras, images per
// camera, how cameras send, the statistic judged by, and the target. A
// button with no row measured at its combination is dimmed and says why.
import { IMAGE_COUNTS, STATISTICS, defaultState, intervalWords } from './logic.js';
import { $, el, setText, plural } from './dom.js';

// segmented fills the button group id with one button per value, named
// by label; a click on one that is not disabled hands its value to pick
// and redraws.
function segmented(x, id, values, pick, label = String) {
  const box = $(id);
  for (const v of values) box.append(el('button', { type: 'button', class: 'seg', 'data-value': String(v), 'aria-pressed': 'false', text: label(v) }));
  box.addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b || b.disabled) return;
    pick(b.dataset.value);
    x.render();
  });
}

export function buildSelectors(x) {
  segmented(x, 'size-buttons', x.sizes, (v) => { x.st.size = v; });
  segmented(x, 'camera-buttons', x.cameraCounts, (v) => { x.st.cameras = Number(v); });
  segmented(x, 'image-buttons', IMAGE_COUNTS, (v) => { x.st.images = Number(v); });
  // How cameras send appears only where some row was measured on a frame clock.
  $('pacing-field').hidden = x.intervals.length === 0;
  segmented(x, 'pacing-buttons', [0, ...x.intervals], (v) => { x.st.interval = Number(v); },
    (v) => (v > 0 ? `A frame every ${v} s` : 'Back to back'));
  segmented(x, 'stat-buttons', STATISTICS, (v) => { x.st.statistic = v; }, (v) => (v === 'mean' ? 'Mean' : v));
  buildTarget(x);
}

// buildTarget ties the target's number field and slider: a number that is
// not a positive one is marked and not used.
function buildTarget(x) {
  const num = $('target-number');
  const range = $('target-range');
  num.addEventListener('input', () => {
    const v = Number(num.value);
    if (num.value === '' || !isFinite(v) || v <= 0) { num.setAttribute('aria-invalid', 'true'); return; }
    num.removeAttribute('aria-invalid');
    x.st.target = v;
    range.value = String(Math.min(Number(range.max), v));
    x.render();
  });
  range.addEventListener('input', () => {
    x.st.target = Number(range.value);
    num.value = String(x.st.target);
    num.removeAttribute('aria-invalid');
    x.render();
  });
}

// syncSelectors writes the state's target into its inputs, and takes back a
// size or frame clock the data does not offer.
export function syncSelectors(x) {
  $('target-number').value = String(x.st.target);
  $('target-range').value = String(Math.min(10, x.st.target));
  if (!x.sizes.includes(x.st.size)) x.st.size = defaultState().size;
  if (!x.intervals.includes(x.st.interval)) x.st.interval = 0;
}

export function paintButtons(x, sel) {
  const at = (size, images) => x.avail.get(`${size}|${images}|${sel.interval}`) || [];
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
    setDimmed(b, (x.avail.get(`${sel.size}|1|${t}`) || []).length === 0, `No row was measured at ${sel.size} ${intervalWords(t)}`);
    b.setAttribute('aria-pressed', String(t === sel.interval));
  }
  for (const b of $('stat-buttons').children) b.setAttribute('aria-pressed', String(b.dataset.value === sel.statistic));
  paintCameraNote(x, sel, camsHere.length > 0, clock);
}

// paintCameraNote says where the figures are read at other cameras or
// images than the ones chosen, and why.
function paintCameraNote(x, sel, camsMeasured, clock) {
  const st = x.st;
  const note = $('cam-note');
  const notes = [];
  if (sel.rowCameras !== st.cameras && camsMeasured) notes.push(`${sel.size} was not measured with ${st.cameras} cameras${clock}, so the table shows the rows measured with ${plural(sel.rowCameras, 'camera', 'cameras')}.`);
  if (sel.cameras !== sel.rowCameras) notes.push(`Several images per request were measured with one camera only, so response time, Max Cameras and PASS/FAIL are read at ${plural(sel.cameras, 'camera', 'cameras')}; the rows stay those measured with ${plural(sel.rowCameras, 'camera', 'cameras')}.`);
  if (sel.interval > 0 && st.images > 1) notes.push('Cameras on a frame clock were measured with one image per request, so the table is read at one image.');
  note.hidden = notes.length === 0;
  if (notes.length) setText(note, notes.join(' '));
}

function setDimmed(b, dim, why) {
  if (b.disabled !== dim) {
    b.disabled = dim;
    if (dim) { b.setAttribute('aria-disabled', 'true'); b.title = why; } else { b.removeAttribute('aria-disabled'); b.removeAttribute('title'); }
  } else if (dim && b.title !== why) b.title = why;
}
