// The lines around the table that say what it shows: how many rows and why
// some are missing, the view the figures are read at, the empty table's
// reason, the simulated-data banner and when the data was generated.
import { filtersActive, intervalWords } from './logic.js';
import { $, setText, formatDate, plural } from './dom.js';

export function paintSummary(x, sel, shown, measuredHere, simShown) {
  const total = x.items.length;
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
  const empty = $('empty');
  empty.hidden = shown > 0;
  if (shown === 0) {
    setText($('empty-text'), total === 0 ? 'No results yet: run a benchmark or import results, then reload this page.' : filtersActive(x.st.filters) && measuredHere > 0
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

export function paintGenerated(x) {
  const gen = x.ds.generated ? formatDate(x.ds.generated) : null;
  setText($('generated'), `${plural(x.items.length, 'configuration', 'configurations')}${gen && gen !== '—' ? `, data generated ${gen}` : ''}.`);
}
