// The explorer page's small DOM and text helpers, shared by its modules.

export function $(id) {
  return document.getElementById(id);
}

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

// setText writes s only where it differs, so an unchanged view costs no
// layout.
export function setText(node, s) {
  if (node.textContent !== s) node.textContent = s;
}

export function formatDate(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (isNaN(d) || d.getUTCFullYear() < 1970) return '—';
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

export function download(name, href) {
  const a = el('a', { href, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
}

export function slug(s) {
  return s.toLowerCase().replace(/[^a-z0-9.]+/g, '-').replace(/^-|-$/g, '');
}
