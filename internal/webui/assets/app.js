// The Stagehand dashboard (docs/dashboard.md). Plain script, no build step: the server
// pushes whole views as server-sent events, and this draws them with textContent only.
"use strict";

const $ = (sel) => document.querySelector(sel);
let stream = null;   // the EventSource of the current view
let logStream = null;
let current = null;  // the DC shown: {ns, name}
let lastDetail = null;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  if (s < 86400) return Math.round(s / 3600) + "h ago";
  return Math.round(s / 86400) + "d ago";
}

function badge(phase) {
  return el("span", phase || "—", "badge phase-" + (phase || "none").toLowerCase());
}

function setLive(text, ok) {
  const live = $("#live");
  live.textContent = text;
  live.classList.toggle("down", !ok);
}

function listen(url, draw) {
  if (stream) stream.close();
  stream = new EventSource(url);
  stream.onopen = () => setLive("live", true);
  stream.onerror = () => setLive("reconnecting…", false);
  stream.onmessage = (ev) => { setLive("live", true); draw(JSON.parse(ev.data)); };
}

function crumbs(parts) {
  const nav = $("#crumbs");
  nav.replaceChildren();
  parts.forEach((p, i) => {
    if (i > 0) nav.append(" / ");
    if (p.href) { const a = el("a", p.text); a.href = p.href; nav.append(a); } else nav.append(el("span", p.text));
  });
}

function showList() {
  current = null;
  closeLog();
  $("#dc-view").hidden = true;
  $("#list-view").hidden = false;
  crumbs([{ text: "DeploymentConfigs" }]);
  document.title = "Stagehand";
  listen("/api/events", drawList);
}

function drawList(list) {
  const body = $("#dc-table tbody");
  body.replaceChildren();
  $("#empty").hidden = list.length > 0;
  for (const dc of list) {
    const tr = el("tr");
    tr.dataset.name = dc.namespace + "/" + dc.name;
    const link = el("a", dc.name);
    link.href = "#/dc/" + encodeURIComponent(dc.namespace) + "/" + encodeURIComponent(dc.name);
    const name = el("td"); name.append(link);
    const phase = el("td"); phase.append(badge(dc.phase));
    tr.append(name, el("td", dc.namespace), phase, el("td", dc.revision),
      el("td", dc.ready + "/" + dc.desired), el("td", dc.paused ? "yes" : ""), el("td", dc.frozen || ""),
      el("td", ago(dc.lastChange)), el("td", (dc.images || []).join(", "), "mono"), el("td", dc.why || "", "why-cell"));
    body.append(tr);
  }
}

function showDC(ns, name) {
  current = { ns, name };
  lastDetail = null;
  closeLog();
  $("#list-view").hidden = true;
  $("#dc-view").hidden = false;
  $("#message").textContent = "";
  crumbs([{ text: "DeploymentConfigs", href: "#/" }, { text: ns + "/" + name }]);
  document.title = name + " · Stagehand";
  $("#dc-title").textContent = "deploymentconfig/" + name;
  listen("/api/events?dc=" + encodeURIComponent(ns + "/" + name), drawDC);
}

function drawDC(d) {
  if (!d) { $("#why").textContent = "This DeploymentConfig does not exist (or you may not read it)."; return; }
  lastDetail = d;
  const sum = $("#dc-summary");
  sum.replaceChildren(badge(d.phase), " revision " + d.revision + " · " + d.ready + "/" + d.desired + " ready" +
    (d.paused ? " · paused" : "") + (d.frozen ? " · frozen at " + d.frozen : "") + " · " + (d.images || []).join(", "));
  $("#why").textContent = d.why ? "Why: " + d.why : "Nothing is waiting.";
  const select = $("#undo-to");
  const chosen = select.value;
  select.replaceChildren();
  for (const r of d.revisions || []) {
    if (r.number === d.revision) continue;
    const o = el("option", r.number + " (" + r.phase + ")");
    o.value = r.number;
    select.append(o);
  }
  if (chosen) select.value = chosen;
  const tl = $("#timeline");
  tl.replaceChildren();
  for (const r of d.revisions || []) {
    const li = el("li", null, "revision");
    li.value = r.number;
    const head = el("div", null, "rev-head");
    head.append(el("strong", "Revision " + r.number), " ", badge(r.phase), " ", el("span", ago(r.created), "muted"));
    li.append(head);
    const facts = el("div", null, "rev-facts");
    if (r.cause) facts.append(el("div", "cause: " + r.cause));
    facts.append(el("div", "images: " + (r.images || []).join(", "), "mono"));
    if (r.step) facts.append(el("div", r.step));
    if (r.reason) facts.append(el("div", "outcome: " + r.reason));
    li.append(facts);
    if ((r.stages || []).length) {
      const ul = el("ul", null, "stages");
      for (const s of r.stages) {
        ul.append(el("li", s.name + ": " + s.state + (s.duration ? " in " + s.duration : "")));
      }
      li.append(ul);
    }
    tl.append(li);
  }
  const body = $("#pod-table tbody");
  body.replaceChildren();
  for (const p of d.pods || []) {
    const tr = el("tr");
    const log = el("td");
    const b = el("button", "Log");
    b.type = "button";
    b.setAttribute("aria-label", "Log of " + p.name);
    b.addEventListener("click", () => openLog(p.name));
    log.append(b);
    tr.append(el("td", p.name, "mono"), el("td", p.role), el("td", p.revision || ""), el("td", p.phase),
      el("td", p.ready ? "yes" : "no"), el("td", p.restarts), el("td", p.node || ""), el("td", p.defer || ""), log);
    body.append(tr);
  }
}

function openLog(pod) {
  closeLog();
  $("#log-panel").hidden = false;
  $("#log-title").textContent = "Log of " + pod;
  const pre = $("#log");
  pre.textContent = "";
  logStream = new EventSource("/api/logs?ns=" + encodeURIComponent(current.ns) + "&pod=" + encodeURIComponent(pod));
  logStream.onmessage = (ev) => { pre.textContent += JSON.parse(ev.data) + "\n"; pre.scrollTop = pre.scrollHeight; };
  logStream.addEventListener("end", () => { logStream.close(); pre.textContent += "(end of log)\n"; });
  logStream.onerror = () => { if (logStream) logStream.close(); };
  pre.focus();
}

function closeLog() {
  if (logStream) logStream.close();
  logStream = null;
  $("#log-panel").hidden = true;
}

async function confirmVerb(verb) {
  const dialog = $("#confirm");
  const diff = $("#confirm-diff");
  let revision = 0;
  $("#confirm-title").textContent = verb === "undo" ? "Undo deploymentconfig/" + current.name + "?" :
    "Run " + verb + " on deploymentconfig/" + current.name + "?";
  diff.textContent = "";
  diff.hidden = verb !== "undo";
  if (verb === "undo") {
    revision = Number($("#undo-to").value || 0);
    const r = await fetch("/api/diff?ns=" + encodeURIComponent(current.ns) + "&name=" + encodeURIComponent(current.name) + "&revision=" + revision);
    const text = await r.text();
    if (!r.ok) { showMessage(text, false); return; }
    diff.textContent = text || "(no change in the spec)";
  }
  dialog.showModal();
  $("#confirm-ok").focus();
  const ok = await new Promise((resolve) => {
    $("#confirm-ok").onclick = () => { dialog.close(); resolve(true); };
    $("#confirm-back").onclick = () => { dialog.close(); resolve(false); };
    dialog.oncancel = () => resolve(false);
  });
  if (!ok) return;
  const r = await fetch("/api/action", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ namespace: current.ns, name: current.name, verb, revision }),
  });
  if (r.ok) showMessage((await r.json()).message, true);
  else showMessage("Refused: " + (await r.text()).trim(), false);
}

function showMessage(text, ok) {
  const m = $("#message");
  m.textContent = text;
  m.className = ok ? "ok" : "error";
}

function route() {
  const m = location.hash.match(/^#\/dc\/([^/]+)\/([^/]+)$/);
  if (m) showDC(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
  else showList();
  $("#main").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("[data-verb]")) {
    b.addEventListener("click", () => confirmVerb(b.dataset.verb));
  }
  $("#log-close").addEventListener("click", closeLog);
  window.addEventListener("hashchange", route);
  route();
});
