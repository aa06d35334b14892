// labchrome.js: what the explorer's pages share with the controller's other
// pages when a controller serves them: the links to Live, Fleet, Sweeps and
// Compare, and the controller's health shown above everything when it is
// not ok. An exported file works alone, offline: it keeps its own header.

const HEALTH_EVERY_MS = 10000;

// showLabChrome unhides the page's links (#lab-nav) and keeps the health
// banner (#health-banner) current, on a page a controller serves (it marks
// <html data-lab="1">).
export function showLabChrome() {
  if (document.documentElement.dataset.lab !== '1') return;
  const nav = document.getElementById('lab-nav');
  if (nav) nav.hidden = false;
  const banner = document.getElementById('health-banner');
  if (!banner) return;
  const check = async () => {
    let h;
    try {
      const res = await fetch('/api/health');
      h = await res.json();
    } catch (err) {
      h = { status: 'unreachable', problems: [{ component: 'controller', error: String(err) }] };
    }
    if (h.status === 'ok') {
      banner.hidden = true;
      return;
    }
    const items = (h.problems || []).map(p => {
      const li = document.createElement('li');
      const name = document.createElement('strong');
      name.textContent = p.component;
      li.append(name, ': ' + p.error);
      return li;
    });
    const title = document.createElement('strong');
    title.textContent = 'Controller ' + String(h.status).toUpperCase();
    const list = document.createElement('ul');
    list.append(...items);
    banner.replaceChildren(title, list);
    banner.hidden = false;
  };
  check();
  setInterval(check, HEALTH_EVERY_MS);
}
