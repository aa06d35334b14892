// The guide's starting points: each preset sets a view (filters, cameras,
// sort) and brings the control to change next into sight. A preset appears
// only when the rows it shows exist, and its link names the rows it selects.
import { SEED_QUANT, SEED_ENGINE, emptyFilters, comparisonPair, engineExample, maxCamerasExample } from './logic.js';
import { $, setText } from './dom.js';

export function buildPresets(x) {
  const rows = x.ds.rows;
  const quantPair = comparisonPair(rows, 'quantization', SEED_QUANT);
  const enginePair = comparisonPair(rows, 'engine', SEED_ENGINE);
  const list = (a) => (a.length > 2 ? `${a.slice(0, -1).join(', ')} and ${a[a.length - 1]}` : a.join(' and '));
  if (quantPair) setText($('preset-quant-link'), `${quantPair.model} at ${list(quantPair.rows.map((r) => r.quantization))} on ${quantPair.device}`);
  if (enginePair) setText($('preset-engine-link'), `${enginePair.model} under ${list(enginePair.rows.map((r) => r.engine))} on ${enginePair.device}`);
  $('preset-quant-link').hidden = !quantPair;
  $('preset-engine-link').hidden = !enginePair;
  $('preset-or').hidden = !quantPair || !enginePair;
  $('start-compare').hidden = !quantPair && !enginePair;
  $('start-compare').querySelector('button').dataset.preset = quantPair ? 'quant' : 'engine';
  $('start-agx').hidden = !x.known.devices.some((d) => /AGX Orin/i.test(d));
  $('start-1080p').hidden = !rows.some((r) => (r.points || []).some((p) => p.size === '1080p'));
  setText($('guide-engine'), engineExample(rows));
  setText($('guide-maxcams'), maxCamerasExample(rows));
  const presets = presetViews(x, quantPair, enginePair);
  document.addEventListener('click', (e) => {
    const b = e.target.closest('.preset[data-preset]');
    if (!b) return;
    e.preventDefault();
    const focus = presets[b.dataset.preset]();
    x.sync();
    x.render();
    if (focus) {
      focus.scrollIntoView({ block: 'center' });
      focus.focus({ preventScroll: true });
    }
  });
}

// presetViews are the presets by name: each sets its view in x.st and
// returns the control to focus.
function presetViews(x, quantPair, enginePair) {
  const known = x.known;
  const matchAll = (list, re) => list.filter((v) => re.test(v));
  const findModel = (name) => known.models.filter((m) => m === name || m.endsWith(`/${name}`));
  const exactOr = (list, name, re) => (list.includes(name) ? [name] : matchAll(list, re));
  return {
    agx: () => {
      x.st.filters = emptyFilters();
      x.st.filters.devices = matchAll(known.devices, /AGX Orin/i);
      x.st.cameras = 1;
      x.st.sort = { key: 'maxcams', dir: 'desc' };
      return $('mincam-range');
    },
    '1080p': () => {
      x.st.size = '1080p';
      x.st.cameras = 1;
      x.st.images = 1;
      x.st.sort = { key: 'maxcams', dir: 'desc' };
      return $('size-buttons').querySelector('[data-value="1080p"]');
    },
    quant: () => {
      x.st.filters = emptyFilters();
      x.st.filters.models = quantPair ? [quantPair.model] : findModel(SEED_QUANT.model);
      x.st.filters.devices = quantPair ? [quantPair.device] : exactOr(known.devices, SEED_QUANT.device, /AGX Orin/i);
      x.st.cameras = 1;
      x.st.sort = { key: 'quant', dir: 'asc' };
      return $('camera-buttons').querySelector('button');
    },
    engine: () => {
      x.st.filters = emptyFilters();
      x.st.filters.models = enginePair ? [enginePair.model] : findModel(SEED_ENGINE.model);
      x.st.filters.devices = enginePair ? [enginePair.device] : exactOr(known.devices, SEED_ENGINE.device, /RTX PRO 6000/i);
      x.st.cameras = 1;
      x.st.sort = { key: 'engine', dir: 'asc' };
      return $('camera-buttons').querySelector('button');
    },
    own: () => {
      x.st.filters = emptyFilters();
      x.st.cameras = 1;
      x.st.sort = { key: 'maxcams', dir: 'desc' };
      return $('f-device').querySelector('input');
    },
  };
}
