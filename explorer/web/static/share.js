// Taking the view away: the rows shown as a CSV file, in the order shown,
// and the link to this view (the URL carries the whole view).
import { toCSV } from './logic.js';
import { $, download, slug } from './dom.js';
import { selection } from './state.js';

export function buildShare(x) {
  $('csv').addEventListener('click', () => {
    const sel = selection(x);
    const blob = new Blob([toCSV(x.matched, sel)], { type: 'text/csv;charset=utf-8' });
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
