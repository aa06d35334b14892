// The cost inputs (price of a kWh, months, and the rest of COST_FIELDS): a
// bad value is refused, named, and the last good one stays in use; a good
// one is kept in the browser and in the URL. Power, energy and cost show
// only where some run sampled power.
import { COST_DEFAULTS, COST_FIELDS, parseCostField } from './logic.js';
import { $, setText } from './dom.js';

const COST_STORAGE_KEY = 'vlmfleet.explorer.cost';

// storedCost is the cost inputs as the browser kept them; a value that no
// longer reads keeps its default.
export function storedCost() {
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

// buildCost wires the cost inputs, and hides the power, energy and cost
// columns and controls where no run sampled power: the published rows have
// none, and four columns of n/a would crowd them.
export function buildCost(x) {
  const hasPower = x.ds.rows.some((r) => (r.points || []).some((p) => p.power_w != null));
  $('table').classList.toggle('no-power', !hasPower);
  $('cost').hidden = !hasPower;
  $('maxw').closest('.field').hidden = !hasPower;
  for (const field of Object.keys(COST_FIELDS)) {
    $(`cost-${field}`).addEventListener('input', (e) => {
      const r = parseCostField(field, e.target.value);
      const box = $('cost-error');
      if (r.error) {
        box.hidden = false;
        setText(box, `${r.error}; keeping ${x.st.cost[field]}.`);
        e.target.setAttribute('aria-invalid', 'true');
        return;
      }
      box.hidden = true;
      e.target.removeAttribute('aria-invalid');
      x.st.cost = { ...x.st.cost, [field]: r.value };
      try { localStorage.setItem(COST_STORAGE_KEY, JSON.stringify(x.st.cost)); } catch { /* storage off: the URL still keeps it */ }
      x.render();
    });
  }
}

// syncCost writes the state's cost into the inputs.
export function syncCost(x) {
  for (const field of Object.keys(COST_FIELDS)) $(`cost-${field}`).value = String(x.st.cost[field]);
  $('cost-error').hidden = true;
}

export function paintCostHead(x) {
  setText($('cost-head'), `Cost per camera per month (${x.st.cost.currency})`);
}
