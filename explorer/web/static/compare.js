// The compare page: reads ?a=RUN&b=RUN, asks the explorer for the two
// runs' comparison (the verdicts are the server's, the same as
// `vlmfleet results diff`) and draws it. window.vlmfleetCompare says when
// it is done, for the browser tests.

import { showLabChrome } from './labchrome.js';
import { el, formatDate } from './dom.js';

const state = { ready: false, error: '' };
window.vlmfleetCompare = state;

const $ = (id) => document.getElementById(id);

showLabChrome();

// Seconds to 0.01 and tok/s to 0.1 with trailing zeros trimmed, as the explorer writes them.
function trimmed(v, decimals) {
  let s = v.toFixed(decimals);
  if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return s === '-0' ? '0' : s;
}

function signed(v) {
  const r = Math.round(v);
  return r === 0 ? '+0' : (r > 0 ? `+${r}` : `${r}`);
}

function figure(m, v) {
  if (m.metric === 'success' || m.metric === 'dropped') return `${Math.round(v)}%`;
  if (m.metric === 'tps_p50') return `${trimmed(v, 1)} tok/s`;
  return `${trimmed(v, 2)} s`;
}

// comboName names a combination by its whole key: "720p, 1 image, 4
// cameras", and ", one frame every 5 s" on a frame clock.
function comboName(c) {
  const paced = c.frame_interval_sec > 0 ? `, one frame every ${c.frame_interval_sec} s` : '';
  return `${c.size}, ${c.images} ${c.images === 1 ? 'image' : 'images'}, ${c.cameras} ${c.cameras === 1 ? 'camera' : 'cameras'}${paced}`;
}

// searchMark says in which run a search for the exact Max Cameras chose the level.
function searchMark(cc) {
  if (!cc.search_a && !cc.search_b) return null;
  const which = cc.search_a && cc.search_b ? 'both runs' : cc.search_a ? 'run A' : 'run B';
  return el('span', { class: 'searched', text: ' search', title: `A level chosen by the search for the exact Max Cameras in ${which}` });
}

const verdictClass = { worse: 'v-worse', better: 'v-better', same: 'v-same', 'not comparable': 'v-unknown' };

// notComparedText matches explorer.NotComparedText: why a
// figure was not compared, with the counts of each side.
const COMPARE_MIN_REQUESTS = 3;
function notComparedText(m) {
  const unit = m.metric === 'dropped' ? 'frame' : 'request';
  return `not compared: ${m.n_a} ${m.n_a === 1 ? unit : `${unit}s`} in A, ${m.n_b} in B; each side needs at least ${COMPARE_MIN_REQUESTS}`;
}

function metricCell(m) {
  const td = el('td', { class: `metric ${verdictClass[m.verdict] || ''}`, 'data-metric': m.metric, 'data-verdict': m.verdict });
  if (m.verdict === 'not comparable') {
    td.append(notComparedText(m));
    td.title = `A figure is compared only where each side has at least ${COMPARE_MIN_REQUESTS}`;
    return td;
  }
  const change = m.metric === 'success' || m.metric === 'dropped' ? `${signed(m.change)} pt` : `${signed(m.rel_change * 100)}%`;
  td.append(`${figure(m, m.a)} → ${figure(m, m.b)} `, el('span', { class: 'change', text: change }));
  // Runs of two power settings are shown unjudged: no verdict word.
  if (m.verdict) td.append(el('span', { class: 'word', text: m.verdict === 'same' ? 'same within noise' : m.verdict }));
  td.title = `Mann-Whitney p = ${m.p.toPrecision(2)}; ${m.n_a} and ${m.n_b} requests`;
  return td;
}

function showError(msg, differences) {
  const box = $('error');
  box.replaceChildren(msg);
  if (differences && differences.length) {
    box.append(el('ul', {}, ...differences.map((d) => el('li', {}, `${d.field}: A is “${d.a}”, B is “${d.b}”`))));
  }
  box.hidden = false;
  state.error = msg;
}

function draw(c, a, b) {
  const cfg = c.config;
  $('config').textContent = `${cfg.model} ${cfg.params_b}B ${cfg.quantization} · ${cfg.engine} · ${cfg.device}${c.simulated ? ' (simulated)' : ''}`;
  $('runs').replaceChildren(...[['A', c.a], ['B', c.b]].map(([name, m]) => el('tr', {},
    el('th', { text: name }), el('td', {}, el('code', { text: m.id })), el('td', { text: formatDate(m.date) }),
    el('td', { text: m.engine_version || '—' }), el('td', { text: m.platform || '—' }), el('td', { text: m.power_mode || '—' }))));
  const v = $('verdict');
  v.className = `verdict ${verdictClass[c.verdict] || ''}`;
  v.textContent = c.verdict === 'worse' ? `B is worse than A in ${c.worse} ${c.worse === 1 ? 'figure' : 'figures'}${c.better ? ` (better in ${c.better})` : ''}.`
    : c.verdict === 'better' ? `B is better than A in ${c.better} ${c.better === 1 ? 'figure' : 'figures'}, worse in none.`
      : c.verdict === 'same' ? 'B is the same as A within noise.'
        : c.not_a_regression ? `Not comparable as a regression: measured in ${c.power_a || 'an unrecorded power setting'} and ${c.power_b || 'an unrecorded power setting'}. The figures are side by side; neither is judged worse or better.`
          : 'Nothing could be compared: too few request records.';
  $('warnings').replaceChildren(...(c.warnings || []).map((w) => el('li', { text: w })));
  // Every combination's metrics have a column: a paced level's dropped
  // frames too, left empty on a back-to-back one.
  const cols = [];
  for (const cc of c.combinations) for (const m of cc.metrics) if (!cols.some((k) => k.metric === m.metric)) cols.push(m);
  const head = $('changes-head');
  head.replaceChildren(el('th', { text: 'Combination' }), ...cols.map((m) => el('th', { text: m.label })));
  $('changes').replaceChildren(...c.combinations.map((cc) => el('tr', { 'data-combo': `${cc.size}/${cc.images}/${cc.cameras}${cc.frame_interval_sec > 0 ? `/every${cc.frame_interval_sec}` : ''}`, 'data-verdict': cc.verdict },
    el('th', {}, comboName(cc), searchMark(cc)),
    ...cols.map((k) => { const m = cc.metrics.find((x) => x.metric === k.metric); return m ? metricCell(m) : el('td', { class: 'metric' }); }))));
  const only = [];
  if (c.only_a && c.only_a.length) only.push(`Measured in A only: ${c.only_a.map(comboName).join('; ')}.`);
  if (c.only_b && c.only_b.length) only.push(`Measured in B only: ${c.only_b.map(comboName).join('; ')}.`);
  $('only').textContent = only.join(' ');
  $('rule').textContent = c.rule;
  $('swap').href = `/compare?${new URLSearchParams({ a: b, b: a })}`;
  $('json').href = `/api/explorer/compare?${new URLSearchParams({ a, b })}`;
  $('result').hidden = false;
}

async function main() {
  const q = new URLSearchParams(location.search);
  const a = q.get('a') || '';
  const b = q.get('b') || '';
  $('in-a').value = a;
  $('in-b').value = b;
  if (!a || !b) {
    state.ready = true;
    return;
  }
  document.title = `${a} → ${b} · Compare · vlmfleet`;
  let resp;
  let body;
  try {
    resp = await fetch(`/api/explorer/compare?${new URLSearchParams({ a, b })}`, { credentials: 'same-origin', cache: 'no-store' });
    body = await resp.json();
  } catch (e) {
    showError(`Could not load the comparison: ${e.message}`);
    return;
  }
  if (!resp.ok) {
    showError(body && body.error ? body.error : `The controller answered ${resp.status}.`, body && body.differences);
    return;
  }
  draw(body, a, b);
  state.ready = true;
}

main();
