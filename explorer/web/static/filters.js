// The filters: chips per device, engine, quantization, parameter count and
// model (with a search over the models), the response-time and camera
// sliders and the power cap. Filters only show or hide rows.
import { PARAM_BUCKETS, RT_STOPS, emptyFilters } from './logic.js';
import { $, el, setText } from './dom.js';

export function buildFilters(x) {
  buildChips(x);
  $('model-search').addEventListener('input', (e) => {
    const q = e.target.value.trim().toLowerCase();
    for (const chip of $('f-model').querySelectorAll('.chip')) chip.hidden = q !== '' && !chip.dataset.search.includes(q);
  });
  const rt = $('rt-range');
  rt.max = String(RT_STOPS.length - 1);
  rt.addEventListener('input', () => { x.st.filters.rtMax = RT_STOPS[Number(rt.value)]; x.render(); });
  const mc = $('mincam-range');
  mc.max = String(x.minCamStops.length - 1);
  mc.addEventListener('input', () => { x.st.filters.minCams = x.minCamStops[Number(mc.value)]; x.render(); });
  $('maxw').addEventListener('input', (e) => {
    const n = Number(e.target.value);
    x.st.filters.maxW = e.target.value.trim() !== '' && isFinite(n) && n > 0 ? n : null;
    x.render();
  });
  const clear = () => { x.st.filters = emptyFilters(); $('model-search').value = ''; x.sync(); x.render(); };
  $('clear-filters').addEventListener('click', clear);
  $('clear-filters-empty').addEventListener('click', clear);
}

// buildChips fills each filter's list with one checkbox per value the data
// holds, and keeps them in x.chipGroups for syncFilters.
function buildChips(x) {
  const groups = [
    ['f-device', 'devices', x.known.devices, (v) => v],
    ['f-engine', 'engines', x.known.engines, (v) => v],
    ['f-quant', 'quants', x.known.quants, (v) => v],
    ['f-params', 'params', x.known.params, (v) => PARAM_BUCKETS.find((b) => b.id === v).label],
    ['f-model', 'models', x.known.models, (v) => v],
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
      x.st.filters[key] = values.filter((v) => inputs.get(v).checked);
      x.render();
    });
    x.chipGroups[key] = inputs;
  }
}

// syncFilters writes the state's filters into the inputs; a value the data
// does not offer is dropped from the state.
export function syncFilters(x) {
  const f = x.st.filters;
  for (const key of Object.keys(x.chipGroups)) {
    f[key] = f[key].filter((v) => x.chipGroups[key].has(v));
    const on = new Set(f[key]);
    for (const [v, input] of x.chipGroups[key]) {
      input.checked = on.has(v);
      input.parentElement.classList.toggle('on', input.checked);
    }
  }
  const rtIdx = RT_STOPS.indexOf(f.rtMax);
  $('rt-range').value = String(rtIdx < 0 ? RT_STOPS.length - 1 : rtIdx);
  let mcIdx = x.minCamStops.indexOf(f.minCams);
  if (mcIdx < 0) { mcIdx = 0; f.minCams = 0; }
  $('mincam-range').value = String(mcIdx);
  $('maxw').value = f.maxW == null ? '' : String(f.maxW);
}

// paintFilterOutputs writes the sliders' values beside them.
export function paintFilterOutputs(x) {
  const f = x.st.filters;
  setText($('rt-out'), f.rtMax == null ? 'any' : `${f.rtMax} s`);
  setText($('mincam-out'), f.minCams > 0 ? String(f.minCams) : 'any');
}
