// The mixed-iceberg dashboard: reads /api/v1/dashboard/* and draws the pages. No library, no build.
"use strict";

const API = "/api/v1/dashboard";
const main = document.getElementById("main");
let current = null; // the route being shown, for Refresh

// ---- helpers -------------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const svgNS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}
function size(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(1)) + " " + units[i];
}
function num(n) { return n === null || n === undefined ? "–" : String(n); }
function ago(ms) {
  if (!ms) return "never";
  const d = Math.max(0, Date.now() - ms) / 1000;
  if (d < 90) return Math.round(d) + " s ago";
  if (d < 5400) return Math.round(d / 60) + " min ago";
  if (d < 129600) return Math.round(d / 3600) + " h ago";
  return Math.round(d / 86400) + " d ago";
}
function age(ms) { return ms === null || ms === undefined ? "–" : (ms / 1000).toFixed(1) + " s"; }
function when(ms) { return ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "–"; }
function state(st) { return st ? h("span", { class: "state-" + st }, st) : h("span", { class: "muted" }, "–"); }
function figure(name, label, value, shown) {
  return h("div", { class: "card", "data-figure": name, "data-value": value },
    h("div", { class: "label" }, label), h("div", { class: "value" }, shown === undefined ? num(value) : shown));
}
function tableOf(columns, rows, opts = {}) {
  const head = h("tr", {}, columns.map(c => h("th", c.sort ? { "data-sort": c.sort, onclick: () => opts.onsort(c.sort) } : {}, c.label)));
  const body = rows.map(r => h("tr", opts.rowAttrs ? opts.rowAttrs(r) : {},
    columns.map(c => {
      const v = c.cell ? c.cell(r) : r[c.key];
      return h("td", { class: c.num ? "num" : null, "data-col": c.key || null }, v === null || v === undefined ? "–" : v);
    })));
  return h("table", opts.attrs || {}, h("thead", {}, head), h("tbody", {}, body));
}
function tableLink(r) {
  return h("a", { href: `#/table/${encodeURIComponent(r.catalog)}/${encodeURIComponent(r.table)}` }, r.catalog + "." + r.table);
}
function toast(text, bad) {
  const t = document.getElementById("toast");
  t.textContent = text; t.className = bad ? "bad" : ""; t.hidden = false;
  clearTimeout(toast.timer); toast.timer = setTimeout(() => { t.hidden = true; }, 8000);
}

// ---- API -----------------------------------------------------------------------------------
class AuthNeeded extends Error {}
async function api(path, options = {}) {
  const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
  const token = sessionStorage.getItem("mixed-iceberg-token");
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch(API + path, Object.assign({}, options, { headers }));
  if (response.status === 401) throw new AuthNeeded("a bearer token is needed");
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((body.error && body.error.message) || response.statusText);
  return body;
}
async function act(catalog, table, body) {
  return api(`/catalogs/${encodeURIComponent(catalog)}/tables/${encodeURIComponent(table)}/actions`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Requested-By": "mixed-iceberg-dashboard" },
    body: JSON.stringify(body),
  });
}

// ---- pages ---------------------------------------------------------------------------------
async function overviewPage() {
  const o = await api("/overview");
  const t = o.totals;
  const groupRows = o.groups;
  return [
    h("h2", {}, "Overview"),
    o.warnings.map(w => h("div", { class: "warning", "data-warning": "group" }, "⚠ " + w)),
    o.system_database ? null : h("div", { class: "note" }, "No optimizer figures: " + (o.system_database_error || "")),
    t.stale ? h("div", { class: "note", "data-stale": t.stale }, `${t.stale} table(s) changed since last summarized; their figures are being read (Refresh).`) : null,
    h("div", { class: "cards" },
      figure("catalogs", "catalogs", o.catalogs.length),
      figure("tables", "tables", t.tables),
      figure("files", "files", t.files),
      figure("bytes", "total size", t.bytes, size(t.bytes)),
      figure("records", "records (written)", t.records)),
    h("div", { class: "grid" },
      h("div", {}, h("h3", {}, "Catalogs"), tableOf([
        { key: "name", label: "catalog" }, { key: "warehouse", label: "warehouse" }, { key: "tables", label: "tables", num: true }], o.catalogs)),
      h("div", {}, h("h3", {}, "Optimizing status"), tableOf([{ key: "status", label: "status" }, { key: "n", label: "tables", num: true }],
        Object.entries(o.status).map(([status, n]) => ({ status, n })), { attrs: { "data-table": "status" } })),
      h("div", {}, h("h3", {}, "Health"), tableOf([{ key: "st", label: "state", cell: r => state(r.st) }, { key: "n", label: "tables", num: true }],
        Object.entries(o.health).map(([st, n]) => ({ st, n }))))),
    h("h3", {}, "Tables most in need"),
    h("div", { class: "grid" },
      h("div", {}, h("h3", {}, "Most files"), tableOf([{ label: "table", cell: tableLink }, { key: "files", label: "files", num: true }], o.need.files)),
      h("div", {}, h("h3", {}, "Smallest average data file"), tableOf([{ label: "table", cell: tableLink },
        { key: "avg_file_size", label: "avg size", cell: r => size(r.avg_file_size), num: true }], o.need.avg_file_size)),
      h("div", {}, h("h3", {}, "Lowest health score"), tableOf([{ label: "table", cell: tableLink },
        { key: "health_score", label: "score", num: true }], o.need.health_score))),
    h("h3", {}, "Groups: resource use"),
    tableOf([
      { key: "group", label: "group" }, { key: "live_optimizers", label: "live optimizers", num: true },
      { key: "threads", label: "threads", num: true }, { key: "tasks_pending", label: "pending tasks", num: true },
      { key: "tasks_running", label: "running tasks", num: true }, { key: "tables", label: "tables", num: true },
      { key: "tables_failed", label: "failed tables", num: true },
      { key: "occupation", label: "occupation (1 min)", cell: r => (r.occupation * 100).toFixed(1) + " %", num: true }],
      groupRows, { attrs: { "data-table": "groups" }, rowAttrs: r => ({ "data-group": r.group }) }),
  ];
}

const listState = { sort: "name", order: null, q: "", offset: 0, limit: 200 };
async function tablesPage() {
  const p = new URLSearchParams({ sort: listState.sort, offset: listState.offset, limit: listState.limit });
  if (listState.order) p.set("order", listState.order);
  if (listState.q) p.set("q", listState.q);
  const r = await api("/tables?" + p);
  const resort = key => {
    listState.order = listState.sort === key ? (listState.order === "asc" ? "desc" : "asc") : null;
    listState.sort = key; listState.offset = 0; show();
  };
  const search = h("input", { type: "search", placeholder: "filter by name", value: listState.q });
  search.addEventListener("change", () => { listState.q = search.value; listState.offset = 0; show(); });
  const pager = h("p", {}, `${r.total} table(s); showing ${r.offset + 1}–${r.offset + r.tables.length} `,
    r.offset > 0 ? h("button", { onclick: () => { listState.offset = Math.max(0, r.offset - listState.limit); show(); } }, "previous") : null,
    r.offset + r.tables.length < r.total ? h("button", { onclick: () => { listState.offset = r.offset + listState.limit; show(); } }, "next") : null);
  return [
    h("h2", {}, "Tables"), search,
    r.stale ? h("div", { class: "note" }, `${r.stale} table(s) not summarized yet (Refresh).`) : null,
    pager,
    tableOf([
      { label: "table", cell: tableLink, sort: "name" }, { key: "group", label: "group" },
      { key: "status", label: "optimizing", sort: "status" },
      { key: "files", label: "files", num: true, sort: "files" }, { key: "bytes", label: "size", cell: x => size(x.bytes), num: true, sort: "bytes" },
      { key: "avg_file_size", label: "avg data file", cell: x => size(x.avg_file_size), num: true, sort: "avg_file_size" },
      { key: "records", label: "records", num: true },
      { key: "health_score", label: "health", cell: x => x.health_score === null ? "–" : h("span", { class: "state-" + x.health_state }, String(x.health_score)), num: true, sort: "health" },
      { key: "last_optimized_ms", label: "last optimized", cell: x => ago(x.last_optimized_ms) },
      { key: "failures", label: "failures", num: true }],
      r.tables, { onsort: resort, attrs: { "data-table": "tables" }, rowAttrs: x => ({ "data-row": x.catalog + "." + x.table }) }),
  ];
}

function lineChart(title, points, key) {
  const W = 360, H = 120, P = 24;
  const chart = s("svg", { class: "chart", width: W, height: H + 20, viewBox: `0 0 ${W} ${H + 20}`, "data-chart": key });
  chart.append(s("text", { x: 6, y: 12 }, title));
  const values = points.map(p => p[key]).filter(v => v !== null && v !== undefined);
  if (values.length === 0) { chart.append(s("text", { x: 6, y: 40 }, "no data")); return chart; }
  const times = points.map(p => p.timestamp_ms);
  const t0 = Math.min(...times), t1 = Math.max(...times), vmax = Math.max(...values, 1);
  const x = t => P + (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (W - 2 * P);
  const y = v => H - (v / vmax) * (H - 24);
  const path = points.filter(p => p[key] !== null && p[key] !== undefined).map((p, i) => (i ? "L" : "M") + x(p.timestamp_ms).toFixed(1) + " " + y(p[key]).toFixed(1)).join(" ");
  chart.append(s("path", { d: path, fill: "none", stroke: "#1f6feb", "stroke-width": 2 }));
  chart.append(s("text", { x: W - P - 60, y: 12 }, "max " + (key === "bytes" ? size(vmax) : vmax)));
  return chart;
}
function barChart(title, labels, counts) {
  const W = 360, H = 120, bw = (W - 20) / counts.length, cmax = Math.max(...counts, 1);
  const chart = s("svg", { class: "chart", width: W, height: H + 30, viewBox: `0 0 ${W} ${H + 30}`, "data-chart": "sizes" });
  chart.append(s("text", { x: 6, y: 12 }, title));
  counts.forEach((c, i) => {
    const bh = (c / cmax) * (H - 24);
    chart.append(s("rect", { x: 10 + i * bw + 2, y: H - bh, width: bw - 4, height: bh, fill: "#1f6feb", "data-count": c }));
    chart.append(s("text", { x: 10 + i * bw + 2, y: H + 12 }, labels[i]));
    if (c) chart.append(s("text", { x: 10 + i * bw + 4, y: H - bh - 2 }, c));
  });
  return chart;
}

function actionsPanel(d, status) {
  const cat = d.catalog, name = d.table;
  const after = async (promise) => {
    try { const r = await promise; toast(r.message); show(); }
    catch (e) { if (e instanceof AuthNeeded) return needToken(); toast(e.message, true); show(); } // a refused action is recorded too
  };
  const type = h("select", { name: "type" }, ["minor", "major", "full"].map(t => h("option", { value: t }, t)));
  const key = h("input", { name: "key", value: "self-optimizing.", size: 36 });
  const value = h("input", { name: "value", size: 14 });
  const enabled = status.optimizing_enabled;
  return h("div", { class: "actions", "data-panel": "actions" },
    h("label", {}, "optimize now", h("span", {}, type, " ", h("button", { type: "button", "data-action": "optimize",
      onclick: () => after(act(cat, name, { action: "optimize", type: type.value })) }, "Optimize"))),
    h("label", {}, "self-optimizing is " + (enabled ? "on" : "paused"),
      h("button", { type: "button", "data-action": enabled ? "pause" : "resume",
        onclick: () => after(act(cat, name, { action: enabled ? "pause" : "resume" })) }, enabled ? "Pause" : "Resume")),
    h("label", {}, "property", key), h("label", {}, "value", value),
    h("button", { type: "button", "data-action": "property",
      onclick: () => after(act(cat, name, { action: "property", key: key.value, value: value.value })) }, "Set"));
}

async function tablePage(catalog, table) {
  const r = await api(`/catalogs/${encodeURIComponent(catalog)}/tables/${encodeURIComponent(table)}`);
  const d = r.describe, st = r.status, f = r.files;
  const stores = [["BaseStore", d.base_store], ["ChangeStore", d.change_store]].filter(x => x[1]);
  const base = r.snapshots.filter(x => x.store === "base"), change = r.snapshots.filter(x => x.store === "change");
  const bucketLabels = f.size_buckets.map(b => "≤" + size(b).replace(".0", "")).concat(["more"]);
  const health = st.health;
  return [
    h("h2", {}, `${catalog}.${table} `, h("span", { class: "muted" }, d.kind)),
    h("div", { class: "cards" },
      figure("records", st.records === null ? "records (at most)" : "records", st.records === null ? st.records_at_most : st.records),
      figure("base-files", "base data files", Object.values(st.base_files).reduce((a, b) => a + b, 0)),
      figure("base-bytes", "base size", st.base_bytes, size(st.base_bytes)),
      figure("change-files", "unmerged change files", st.change_files_unmerged),
      figure("delete-ratio", "delete ratio", st.delete_ratio),
      figure("health-score", "health score", health.score, h("span", { class: "state-" + health.state }, `${health.score} ${health.state}`)),
      figure("pending", "optimizing due", st.pending || "none"),
      figure("enabled", "self-optimizing", st.optimizing_enabled ? "on" : "paused")),
    health.checks.filter(c => c.state !== "green").map(c => h("div", { class: c.state === "red" ? "warning" : "note" },
      `${c.state}: ${c.key} is ${c.value}, target ${c.target}`)),
    h("h3", {}, "Actions"), actionsPanel(d, st),
    h("div", { class: "grid" },
      h("div", {}, h("h3", {}, "Details"), tableOf([{ key: "k", label: "" }, { key: "v", label: "" }], [
        { k: "format", v: d.format }, { k: "primary key", v: d.primary_key.join(", ") || "none" },
        { k: "partition spec", v: d.partition_spec.map(p => `${p.transform}(${p.source})`).join(", ") || "unpartitioned" },
        { k: "merge engine", v: d.merge_engine ? `${d.merge_engine} (sequence field ${d.sequence_field || "none"})` : "–" },
        { k: "optimizer group", v: st.optimizer_group },
        ...stores.map(([n, x]) => ({ k: n, v: `${x.location} · ${x.snapshots} snapshot(s) · current ${x.current_snapshot_id}` }))],
        { attrs: { "data-table": "details" } })),
      h("div", {}, h("h3", {}, "Schema"), tableOf([{ key: "id", label: "id", num: true }, { key: "name", label: "name" },
        { key: "type", label: "type" }, { key: "required", label: "required", cell: c => c.required ? "yes" : "no" }], d.columns))),
    h("h3", {}, "Files by partition"),
    f.truncated ? h("p", { class: "muted" }, "Only the first files are listed.") : null,
    tableOf([{ key: "partition", label: "partition" }, { key: "files", label: "files", num: true },
      { key: "bytes", label: "size", cell: p => size(p.bytes), num: true }, { key: "records", label: "records", num: true },
      ...Object.keys(f.partitions[0] ? f.partitions[0].classes : {}).map(k => ({ key: k, label: k, cell: p => p.classes[k], num: true }))],
      f.partitions, { attrs: { "data-table": "partitions" }, rowAttrs: p => ({ "data-partition": p.partition }) }),
    f.partitions.map(p => h("details", {}, h("summary", {}, `${p.partition}: ${p.listed.length} file(s) listed`),
      tableOf([{ key: "path", label: "file", cell: x => x.path.split("/").pop() }, { key: "class", label: "class" },
        { key: "size", label: "size", cell: x => size(x.size), num: true }, { key: "records", label: "records", num: true },
        { key: "sequence", label: "sequence", num: true }, { key: "snapshot_id", label: "commit (snapshot)" }], p.listed))),
    h("div", { class: "grid" }, barChart("data file sizes", bucketLabels, f.size_distribution)),
    h("h3", {}, "Snapshots: trends"),
    h("div", { class: "grid" },
      lineChart("BaseStore files", base, "data_files"), lineChart("BaseStore records", base, "records"), lineChart("BaseStore size", base, "bytes"),
      change.length ? lineChart("ChangeStore files", change, "data_files") : null),
    h("details", {}, h("summary", {}, `${r.snapshots.length} snapshot(s) of both stores`),
      tableOf([{ key: "store", label: "store" }, { key: "snapshot_id", label: "snapshot" }, { label: "committed", cell: x => when(x.timestamp_ms) },
        { key: "operation", label: "operation" }, { key: "optimizing", label: "optimizing" }, { key: "data_files", label: "data files", num: true },
        { key: "delete_files", label: "delete files", num: true }, { key: "records", label: "records", num: true },
        { key: "bytes", label: "size", cell: x => size(x.bytes), num: true }], r.snapshots.slice().reverse(), { attrs: { "data-table": "snapshots" } })),
    h("h3", {}, "Optimizing history"),
    r.system_database ? null : h("p", { class: "muted" }, "No optimizer config beside the catalogs file: no history."),
    r.runtime ? h("p", {}, `In group ${r.runtime.group}: ${r.runtime.status}; quota ${r.runtime.quota}; failures ${r.runtime.failures}`,
      r.runtime.last_error ? h("span", { class: "error" }, " last error: " + r.runtime.last_error) : null) : null,
    tableOf([{ key: "process", label: "process", num: true }, { key: "type", label: "type" }, { key: "status", label: "status" },
      { label: "planned", cell: p => when(p.planned_ms) }, { label: "duration", cell: p => p.duration_ms === null ? "running" : age(p.duration_ms) },
      { key: "files_in", label: "files in", num: true }, { key: "files_out", label: "files out", num: true },
      { label: "bytes", cell: p => `${size(p.bytes_in)} → ${size(p.bytes_out)}` },
      { label: "tasks", cell: p => h("details", {}, h("summary", {}, String(p.tasks.length)),
        tableOf([{ key: "task", label: "task" }, { key: "status", label: "status" }, { key: "optimizer", label: "optimizer" },
          { key: "retries", label: "retries", num: true }, { label: "duration", cell: t => age(t.duration_ms) }, { key: "error", label: "error" }], p.tasks)) },
      { key: "error", label: "error" }], r.processes, { attrs: { "data-table": "processes" } }),
    h("h3", {}, "Properties"),
    tableOf([{ key: "k", label: "key" }, { key: "v", label: "value" }], Object.entries(d.properties).map(([k, v]) => ({ k, v })),
      { attrs: { "data-table": "properties" }, rowAttrs: x => ({ "data-key": x.k }) }),
    h("h3", {}, "Actions taken"),
    tableOf([{ label: "when", cell: a => when(a.at_ms) }, { key: "action", label: "action" }, { label: "arguments", cell: a => JSON.stringify(a.arguments) },
      { key: "outcome", label: "outcome" }, { key: "message", label: "message" }, { key: "actor", label: "by" }], r.actions, { attrs: { "data-table": "actions" } }),
  ];
}

async function groupsPage() {
  const r = await api("/groups");
  if (!r.system_database) return [h("h2", {}, "Groups and optimizers"), h("div", { class: "note" }, "No optimizer config beside the catalogs file.")];
  return [
    h("h2", {}, "Groups and optimizers"),
    r.warnings.map(w => h("div", { class: "warning", "data-warning": "group" }, "⚠ " + w)),
    tableOf([{ key: "group", label: "group" }, { key: "declared", label: "declared", cell: g => g.declared ? "yes" : "no" },
      { key: "live_optimizers", label: "live optimizers", num: true }, { key: "threads", label: "threads", num: true },
      { key: "tasks_pending", label: "pending tasks", num: true }, { key: "tasks_running", label: "running tasks", num: true },
      { key: "tasks_failed", label: "failed tasks", num: true }, { label: "tables", cell: g => g.tables.length, num: true }],
      r.groups, { attrs: { "data-table": "groups" }, rowAttrs: g => ({ "data-group": g.group }) }),
    h("h3", {}, "Optimizers"),
    tableOf([{ key: "optimizer", label: "optimizer" }, { key: "group", label: "group" }, { key: "container", label: "container" },
      { key: "threads", label: "threads", num: true }, { key: "host", label: "host" }, { key: "pid", label: "pid", num: true },
      { key: "live", label: "live", cell: o => o.live ? "live" : "stopped" }, { label: "heartbeat age", cell: o => age(o.heartbeat_age_ms) }],
      r.optimizers, { attrs: { "data-table": "optimizers" }, rowAttrs: o => ({ "data-optimizer": o.optimizer }) }),
    h("h3", {}, "Tables by group: quota and occupation"),
    tableOf([{ key: "group", label: "group" }, { key: "table", label: "table" }, { key: "status", label: "status" },
      { key: "quota", label: "quota", num: true },
      { key: "occupation", label: "threads used (1 min)", num: true }, { key: "tasks_running", label: "running tasks", num: true },
      { key: "tasks_waiting", label: "waiting tasks", num: true },
      { key: "failures", label: "failures", num: true }, { key: "last_error", label: "last error" }],
      r.groups.flatMap(g => g.tables.map(t => Object.assign({ group: g.group }, t)))),
  ];
}

// ---- routing -------------------------------------------------------------------------------
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "tables") return ["tables", tablesPage];
  if (parts[0] === "groups") return ["groups", groupsPage];
  if (parts[0] === "table" && parts.length >= 3) return ["table", () => tablePage(parts[1], parts.slice(2).join("/"))];
  return ["overview", overviewPage];
}
function needToken() {
  document.getElementById("login").hidden = false;
  main.replaceChildren(h("p", { class: "muted" }, "Waiting for a token."));
}
async function show() {
  const [name, build] = route();
  current = name;
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("active", a.dataset.nav === name));
  try {
    const content = await build();
    document.getElementById("login").hidden = true;
    main.replaceChildren(...content.flat().filter(Boolean));
    main.dataset.page = name;
    main.dataset.loaded = String(Date.now());
  } catch (e) {
    if (e instanceof AuthNeeded) return needToken();
    main.replaceChildren(h("p", { class: "error", "data-error": "page" }, "Could not load this page: " + e.message));
  }
}
document.getElementById("login").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem("mixed-iceberg-token", document.getElementById("token").value.trim());
  show();
});
document.getElementById("refresh").addEventListener("click", show);
window.addEventListener("hashchange", show);
show();
