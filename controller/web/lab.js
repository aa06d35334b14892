// lab.js: the code the controller's pages (/live, /fleet, /sweeps,
// /sweeps/{id}) share. A classic script, loaded before each page's own, so
// that its functions are the page's globals. Every page has the same
// header (links, the API token field, the health mark) and the health
// banner under it, which this script keeps current.
"use strict";

// The states after which a job does nothing more (protocol.JobState).
const terminal = new Set(["completed", "failed", "cancelled", "rejected"]);

// el builds an element: attrs as attributes ("class" as the class name),
// kids as children, text for anything that is not a node.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(k == null ? "" : String(k)));
  return e;
}

function fmt(v, unit, digits) { return (v == null) ? "–" : v.toFixed(digits) + unit; }
function when(t) { return t ? new Date(t).toLocaleString() : ""; }
// ago says how long ago t was, in the words a glance needs.
function ago(t) {
  if (!t) return "never";
  const s = Math.max(0, (Date.now() - Date.parse(t)) / 1000);
  return s < 60 ? Math.round(s) + " s ago" : s < 3600 ? Math.round(s / 60) + " min ago" : new Date(t).toLocaleString();
}
// comboWords names a combination as the pages show it: "720p · 1 img ·
// 4 cam", and " · every 5 s" for cameras on a frame clock.
function comboWords(k) {
  return k.size + " · " + k.images + " img · " + k.cameras + " cam" + (k.frame_interval_sec > 0 ? " · every " + k.frame_interval_sec + " s" : "");
}
// comboKeyText keys a combination by all of it, the frame clock included.
function comboKeyText(k) { return k.size + "-" + k.images + "-" + k.cameras + "-" + (k.frame_interval_sec || 0); }

// powerText names a job's power setting as the explorer does: "15W",
// "300 W limit"; "" for a job that leaves its device as found.
function powerText(p) { return !p ? "" : p.mode || (p.limit_w ? p.limit_w + " W limit" : ""); }

function simBadge() { return el("span", {class: "badge sim", title: "simulated device and engine"}, "SIMULATED"); }

// deploymentsCell: the deployments an agent offers, and those its
// configuration names but it cannot serve, each with the reason the agent
// gave.
function deploymentsCell(a) {
  const td = el("td", {});
  const deps = (a.deployments || []).map(d => d.id + (d.simulated ? " (sim)" : "")).join(", ");
  const broken = a.broken_deployments || [];
  if (deps) td.append(deps);
  else td.append(el("span", {class: broken.length ? "stalled" : "muted"}, "offers no deployment"));
  for (const b of broken) {
    td.append(el("div", {class: "broken", title: b.reason},
      el("span", {class: "badge stalled"}, "BROKEN"), " ", b.id || "(no id)", " ",
      el("span", {class: "muted"}, b.reason)));
  }
  return td;
}

// The API token, typed on a page that changes something, is kept for this
// tab only (sessionStorage), so that it is typed once per visit whichever
// page it is typed on. Reads never need it: the /login cookie or loopback
// authorises them; a change always does (docs/security.md).
const tokenKey = "vlmfleet_token";

// tokenField fills the input with the kept token and keeps what is typed
// into it; it returns a function that reads the token now, and keeps that
// too (a field filled without an input event, by a password manager or a
// script, is kept once it is used).
function tokenField(input) {
  input.value = sessionStorage.getItem(tokenKey) || "";
  input.addEventListener("input", () => sessionStorage.setItem(tokenKey, input.value.trim()));
  return () => {
    const t = input.value.trim();
    if (t) sessionStorage.setItem(tokenKey, t);
    return t;
  };
}

// change sends a change to the API with the token; body, when given, is
// sent as JSON (the only body a change accepts).
function change(method, path, token, body) {
  const headers = {"Authorization": "Bearer " + token};
  const init = {method: method, headers: headers};
  if (body !== undefined) { headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  return fetch(path, init);
}

// nextLink is the next page of a list answer (its Link rel="next"), or ""
// on the last page (docs/api.md, "Lists and pages").
function nextLink(response) {
  const m = /<([^>]*)>\s*;\s*rel="?next"?/.exec(response.headers.get("Link") || "");
  return m ? m[1] : "";
}

// follow opens /api/events (query: "?kind=…" or ""), shows the connection's
// state in #conn when the page has one, and hands each event kind's
// decoded data to its handler; onopen runs at each (re)connection.
function follow(query, handlers, onopen) {
  const es = new EventSource("/api/events" + query);
  const conn = document.getElementById("conn");
  es.onopen = () => { if (conn) conn.textContent = "live"; if (onopen) onopen(); };
  es.onerror = () => { if (conn) conn.textContent = "reconnecting…"; };
  for (const [kind, fn] of Object.entries(handlers)) es.addEventListener(kind, e => fn(JSON.parse(e.data)));
  return es;
}

// The controller's own health (GET /api/health, 503 when not ok): what is
// broken is shown above everything else, so a full disk or a lost consumer
// is not mistaken for a quiet lab.
async function checkHealth() {
  const box = document.getElementById("health"), ok = document.getElementById("health-ok");
  let h;
  try {
    const r = await fetch("/api/health");
    h = await r.json();
  } catch (err) {
    h = {status: "unreachable", problems: [{component: "controller", error: String(err)}]};
  }
  showFleetProblems(h);
  if (h.status === "ok") {
    box.style.display = "none"; ok.textContent = "health ok";
    return;
  }
  ok.textContent = "";
  const list = el("ul", {});
  for (const p of h.problems || []) {
    list.append(el("li", {}, el("strong", {}, p.component), ": " + p.error + (p.since ? " (since " + ago(p.since) + ")" : "")));
  }
  box.replaceChildren(el("strong", {}, "Controller " + String(h.status).toUpperCase()), list);
  box.style.display = "block";
}

// showFleetProblems lists the fleet's matters (silent agents, a second
// process with an agent's id, agents that need an upgrade) on the page
// that has a place for them, /fleet's #fleet-problems. They are no
// controller problem: no other page shows a banner for them.
function showFleetProblems(h) {
  const box = document.getElementById("fleet-problems");
  if (!box) return;
  const items = h.fleet || [];
  box.replaceChildren(...items.map(p => el("li", {}, el("strong", {}, p.component), ": " + p.error)));
  box.style.display = items.length ? "block" : "none";
}

// token reads the header's token field, filled with the kept token on
// every page, so that it is typed once for all of them.
const token = document.getElementById("token") ? tokenField(document.getElementById("token")) : () => "";

// Every page shows the controller's health, checked every 5 s.
if (document.getElementById("health")) {
  checkHealth();
  setInterval(checkHealth, 5000);
}
