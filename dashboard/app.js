/* reefkit results dashboard.
 *
 * One classic script (ES modules do not load from file:// in Chromium), no build step.
 * Data comes as scripts written by `cr dashboard build`: data/index.js (leaderboard rows),
 * data/runs.js (every run, loaded when a detail page wants the history) and
 * data/results/<bundle>.js (the records of a few dozen files, loaded when one of them is
 * opened; CR_RESULTS["<bundle>:<uid>"] = {source, raw, record}).
 *
 * Security rule: text from a result is only ever set with textContent / createTextNode,
 * attribute values with setAttribute on a fixed list of harmless attributes, links are
 * built here from validated uids, and charts draw text on a canvas. No innerHTML.
 *
 * Robustness rule: a record is data from anywhere. A schema-valid record may hold a string,
 * a list, null or a huge number wherever the schema leaves a field open, so every value
 * read from a record goes through obj() / arr() / isNum() (or String()) before a method is
 * called on it; a view never assumes a field's type.
 *
 * Routes: #/leaderboard, #/pareto, #/result/<uid>, #/compare/<uid>,<uid>[,...], #/campaign[/<name>]
 * Test hook: window.CR_DASHBOARD (ready, view, rowsTotal, rowsShown, paretoPoints, pareto, errors).
 */
(function () {
  "use strict";

  var CHART_JS = "vendor/chart.js-4.6.1/chart.umd.min.js";
  var UID_RE = /^[A-Za-z0-9_-]{1,64}$/;
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  // Chart.js point styles and the character that stands for each in the legend
  var SHAPES = [["circle", "\u25CF"], ["triangle", "\u25B2"], ["rect", "\u25A0"], ["rectRot", "\u25C6"],
                ["crossRot", "\u2715"], ["cross", "\u271A"], ["star", "\u2733"]];
  var DASHES = [[], [6, 4], [2, 3], [10, 3, 2, 3], [1, 6]];

  var hook = window.CR_DASHBOARD = {
    ready: false, view: "", renders: 0, rowsTotal: 0, rowsShown: 0, rowsFiltered: 0,
    paretoPoints: 0, pareto: null, firstRowsAt: null, errors: []
  };
  window.addEventListener("error", function (e) { hook.errors.push(String(e.message || e)); });
  window.addEventListener("unhandledrejection", function (e) { hook.errors.push(String(e.reason)); });
  // Asynchronous work of the current view (a result loading, a chart drawing): hook.pending
  // is 0 when the page shows everything it is going to.
  hook.pending = 0;
  function track(promise) {
    hook.pending++;
    return promise.then(function (v) { hook.pending--; return v; }, function (e) { hook.pending--; throw e; });
  }

  var S = {
    index: null, rows: [], strings: [],
    filters: { task: "", dataset: "", name: "", backend: "", platform: "", precision: "", scenario: "", config: "", q: "" },
    sort: { col: null, dir: 1 }, page: 0, pageSize: 100, selected: new Set(),
    paretoX: null, paretoLog: true, charts: [], token: 0, view: null,
    cache: null, rowsByKey: null, partial: {}
  };
  var BIG_FILTER = 300;  // a filter with more values than this is a text box

  // ---------------------------------------------------------------- DOM, text only
  var SAFE_ATTRS = { title: 1, type: 1, id: 1, colspan: 1, role: 1, placeholder: 1, "for": 1, scope: 1, name: 1, min: 1, max: 1, step: 1 };

  function h(tag, props) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = String(v);
        else if (k === "class") node.className = v;
        else if (k === "on") Object.keys(v).forEach(function (ev) { node.addEventListener(ev, v[ev]); });
        else if (k === "href") node.setAttribute("href", route(v));
        else if (k === "value") node.value = String(v);
        else if (k === "checked" || k === "selected" || k === "disabled") node[k] = !!v;
        else if (SAFE_ATTRS[k] || k.indexOf("data-") === 0 || k.indexOf("aria-") === 0) node.setAttribute(k, String(v));
        else throw new Error("attribute not allowed: " + k);
      });
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  function add(node, child) {
    if (child === null || child === undefined || child === false || child === "") return;
    if (Array.isArray(child)) child.forEach(function (c) { add(node, c); });
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }

  // Links only ever point inside the app.
  // Links stay inside the app, but for the profile traces the builder copied into the site
  // (data/traces/<sha256>.trace.json.gz: cr.dashboard.records.copy_trace).
  var TRACE_HREF = /^data\/traces\/[0-9a-f]{64}\.trace\.json\.gz$/;
  function route(v) { v = String(v); return v.charAt(0) === "#" || TRACE_HREF.test(v) ? v : "#/"; }
  function resultHref(uid) { return "#/result/" + encodeURIComponent(uid); }
  function compareHref(uids) { return "#/compare/" + uids.map(encodeURIComponent).join(","); }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // ---------------------------------------------------------------- formatting
  var DASH = "\u2014";
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  // A record's member as an object ({} when it is anything else: null, a list, a string...) or as a list.
  function obj(v) { return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {}; }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function txt(v) { return v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); }
  function fmtDur(ns) {
    if (!isNum(ns)) return DASH;
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + " ns";
    if (a < 1e6) return (ns / 1e3).toPrecision(3) + " \u00B5s";
    if (a < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
    return (ns / 1e9).toPrecision(3) + " s";
  }
  function fmtPct(x) { return isNum(x) ? (x * 100).toFixed(2) + " %" : DASH; }
  function fmtRate(x) {
    if (!isNum(x)) return DASH;
    return (x >= 100 ? Math.round(x).toLocaleString("en-US") : x.toPrecision(3)) + " /s";
  }
  function fmtBytes(b) {
    if (!isNum(b)) return DASH;
    if (b >= Math.pow(2, 30)) return (b / Math.pow(2, 30)).toFixed(2) + " GiB";
    if (b >= Math.pow(2, 20)) return (b / Math.pow(2, 20)).toFixed(1) + " MiB";
    return (b / 1024).toFixed(1) + " KiB";
  }
  function fmtEnergy(j) {
    if (!isNum(j)) return DASH;
    if (j >= 1) return j.toPrecision(3) + " J";
    if (j >= 1e-3) return (j * 1e3).toPrecision(3) + " mJ";
    return (j * 1e6).toPrecision(3) + " \u00B5J";
  }
  function fmtInt(x) { return isNum(x) ? x.toLocaleString("en-US") : DASH; }
  function fmtDate(s) { return s ? String(s).slice(0, 16).replace("T", " ") : DASH; }
  function fmtAny(v) {
    if (v === null || v === undefined || v === "") return DASH;
    if (typeof v === "object") return JSON.stringify(v);
    if (typeof v === "number" && isFinite(v) && !Number.isInteger(v)) return String(+v.toPrecision(6));
    return String(v);
  }
  function short(s, n) { s = String(s || ""); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }

  // ---------------------------------------------------------------- data
  // Rows stay the arrays data/index.js holds; a small view object per row reads them through
  // getters (strings looked up on access). Building 50,000 views takes milliseconds, where
  // copying every value into a fresh object took hundreds.
  function decode(table, strings) {
    var interned = {};
    (table.interned || []).forEach(function (c) { interned[c] = 1; });
    function Row(values, i) { this.v = values; this.i = i; }
    table.columns.forEach(function (c, j) {
      var get;
      if (c === "tags") get = function () { return (this.v[j] || []).map(function (t) { return strings[t]; }); };
      else if (interned[c]) get = function () { return strings[this.v[j]]; };
      else get = function () { return this.v[j]; };
      Object.defineProperty(Row.prototype, c, { get: get, enumerable: true });
    });
    return table.rows.map(function (r, i) { return new Row(r, i); });
  }

  // {columns, interned, count, values: {column: [...]}} -> row objects
  function decodeColumns(table, strings) {
    var interned = {}, out = new Array(table.count);
    (table.interned || []).forEach(function (c) { interned[c] = 1; });
    for (var i = 0; i < table.count; i++) out[i] = { i: i };
    table.columns.forEach(function (c) {
      var values = table.values[c];
      for (var i = 0; i < table.count; i++) out[i][c] = interned[c] ? strings[values[i]] : values[i];
    });
    return out;
  }

  var scriptPromises = {};
  function loadScript(src) {
    if (!scriptPromises[src]) {
      scriptPromises[src] = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(); };
        s.onerror = function () { delete scriptPromises[src]; s.remove(); reject(new Error("cannot load " + src)); };
        document.head.appendChild(s);
      });
    }
    return scriptPromises[src];
  }

  // Which detail file (bundle) holds a result: the leaderboard rows know the latest ones,
  // data/runs.js knows every one.
  var locations = null;
  function locate(uid) {
    if (!locations) {
      locations = new Map();
      S.rows.forEach(function (r) {
        if (r.bench_uid) locations.set(r.bench_uid, r.bench_loc);
        if (r.validate_uid) locations.set(r.validate_uid, r.validate_loc);
      });  // (other_uid: data/runs.js knows where)
    }
    if (locations.has(uid)) return Promise.resolve(locations.get(uid));
    return loadRuns().then(function (runs) {
      if (!runs.locations.has(uid)) throw new Error("no result " + uid + " on this site");
      return runs.locations.get(uid);
    });
  }

  function loadResult(uid) {
    if (!UID_RE.test(uid)) return Promise.reject(new Error("not a result id"));
    return locate(uid).then(function (loc) {
      if (!/^[0-9a-f]{4}$/.test(loc)) throw new Error("bad location");
      return loadScript("data/results/" + loc + ".js").then(function () {
        // {source: file name, raw: samples (at most 2048, in time order), record: the record as stored}
        var entry = (window.CR_RESULTS || {})[loc + ":" + uid];
        if (!entry || !entry.record || typeof entry.record !== "object") throw new Error("data/results/" + loc + ".js holds no result " + uid);
        var rec = entry.record;
        rec.raw = entry.raw;
        rec.dashboard_source = entry.source;
        rec.dashboard_trace = typeof entry.trace === "string" && TRACE_HREF.test(entry.trace) ? entry.trace : null;
        return rec;
      });
    });
  }

  var runsPromise = null;
  function loadRuns() {
    if (!runsPromise) {
      runsPromise = loadScript("data/runs.js").then(function () {
        var runs = decodeColumns(window.CR_DATA_RUNS, S.strings);
        var byKey = new Map(), where = new Map(), keys = new Map();
        runs.forEach(function (r) {
          if (!byKey.has(r.key)) byKey.set(r.key, []);
          byKey.get(r.key).push(r);
          where.set(r.uid, r.loc);
          keys.set(r.uid, r.key);
        });
        return { byKey: byKey, locations: where, keys: keys };
      });
    }
    return runsPromise;
  }

  function loadChart() {
    return loadScript(CHART_JS).then(function () {
      var Chart = window.Chart;
      if (!Chart.__crConfigured) {
        Chart.defaults.animation = false;
        Chart.defaults.maintainAspectRatio = false;
        var css = getComputedStyle(document.documentElement);
        Chart.defaults.color = css.getPropertyValue("--fg").trim() || "#1d2330";
        Chart.defaults.borderColor = css.getPropertyValue("--line").trim() || "#d9dee7";
        Chart.__crConfigured = true;
      }
      return Chart;
    });
  }

  // Record -> the leaderboard rows of its configuration. The rows that show the record itself
  // (by uid) name the configuration exactly; for an older run, the key is computed as the
  // builder does (records.summarise: Python's str() of each field, cut to its length).
  function pyStr(v, n) {
    if (v === null || v === undefined) return "";
    if (v === true || v === false) return v ? "True" : "False";
    return Array.from(typeof v === "object" ? JSON.stringify(v) : String(v)).slice(0, n || 200).join("");
  }
  function recordKey(rec) {
    var c = obj(arr(rec.components).filter(function (x) { return x && typeof x === "object" && !Array.isArray(x); })[0]);
    var b = obj(rec.backend), cfg = obj(rec.config), p = obj(rec.pipeline), pl = obj(rec.platform);
    return [pyStr(c.ref) || "unknown", pyStr(b.name || cfg.backend, 60) || "unknown", pyStr(p.variant || cfg.variant, 80),
            pyStr(p.precision, 40), pyStr(pl.fingerprint, 40) || "unknown"].join("\u0000");
  }
  function rowKey(r) { return [r.subject, r.backend, r.variant, r.precision, r.platform].join("\u0000"); }
  function indexRows() {
    if (!S.rowsByKey) {
      S.rowsByKey = new Map();
      S.rowsByUid = new Map();
      S.rowsByPosition = new Map();
      S.rows.forEach(function (r) {
        var k = rowKey(r);
        if (!S.rowsByKey.has(k)) S.rowsByKey.set(k, []);
        S.rowsByKey.get(k).push(r);
        if (!S.rowsByPosition.has(r.key)) S.rowsByPosition.set(r.key, S.rowsByKey.get(k));
        [r.bench_uid, r.validate_uid, r.other_uid].forEach(function (u) { if (u && !S.rowsByUid.has(u)) S.rowsByUid.set(u, r); });
      });
    }
  }
  // The rows of rec's configuration, the row that shows rec first.
  function rowsFor(rec) {
    indexRows();
    var own = S.rowsByUid.get(rec.uid);
    var rows = own ? S.rowsByPosition.get(own.key) || [own] : S.rowsByKey.get(recordKey(rec)) || [];
    return own ? [own].concat(rows.filter(function (r) { return r !== own; })) : rows;
  }

  // ---------------------------------------------------------------- filters
  var FILTERS = [
    ["task", "Task", function (r) { return r.task; }, null],
    ["dataset", "Dataset", function (r) { return r.dataset; }, null],
    ["name", "Model", function (r) { return r.name; }, null],
    ["backend", "Backend", function (r) { return r.backend; }, null],
    ["platform", "Platform", function (r) { return r.platform; }, function (r) { return r.platform_label; }],
    ["precision", "Precision", function (r) { return r.precision; }, null],
    ["scenario", "Scenario", function (r) { return r.scenario; }, null],
    ["config", "Config", function (r) { return r.config; }, null],
    ["campaign", "Campaign", function (r) { return r.campaign; }, null]
  ];

  function searchText(r) {
    if (r._q === undefined) {
      r._q = [r.name, r.version, r.subject, r.task, r.dataset, r.backend, r.backend_version, r.variant, r.precision,
              r.platform_label, r.platform, r.arch, r.scenario, r.config, r.outcome, r.validity, r.error, r.reproduction,
              r.bench_uid, r.validate_uid, r.other_uid].concat(r.tags).join("\n").toLowerCase();
    }
    return r._q;
  }

  function filteredRows() {
    var f = S.filters;
    var cacheKey = JSON.stringify([f, S.sort, S.partial]);
    if (S.cache && S.cache.key === cacheKey) return S.cache.rows;
    var words = f.q.toLowerCase().split(/\s+/).filter(Boolean);
    var exact = FILTERS.filter(function (spec) { return f[spec[0]] && !S.partial[spec[0]]; }).map(function (spec) { return [spec[2], f[spec[0]]]; });
    var partial = FILTERS.filter(function (spec) { return f[spec[0]] && S.partial[spec[0]]; })
      .map(function (spec) { return [spec[2], f[spec[0]].toLowerCase()]; });
    var rows = S.rows.filter(function (r) {
      for (var e = 0; e < exact.length; e++) if (exact[e][0](r) !== exact[e][1]) return false;
      for (var p = 0; p < partial.length; p++) if (String(partial[p][0](r)).toLowerCase().indexOf(partial[p][1]) < 0) return false;
      if (!words.length) return true;
      var t = searchText(r);
      for (var i = 0; i < words.length; i++) if (t.indexOf(words[i]) < 0) return false;
      return true;
    });
    if (S.sort.col) {
      var col = COLUMN_BY_ID[S.sort.col], dir = S.sort.dir, get = col.sortValue || function (r) { return r[col.id]; };
      rows = rows.map(function (r) { return [get(r), r]; });
      rows.sort(function (a, b) {
        var x = a[0], y = b[0];
        var xn = x === null || x === undefined || x === "", yn = y === null || y === undefined || y === "";
        if (xn || yn) return xn === yn ? a[1].i - b[1].i : (xn ? 1 : -1); // blanks last either way
        if (x < y) return -dir;
        if (x > y) return dir;
        return a[1].i - b[1].i;
      });
      rows = rows.map(function (p) { return p[1]; });
    }
    S.cache = { key: cacheKey, rows: rows };
    return rows;
  }

  function filterBar(onChange) {
    var bar = h("div", { class: "filters", role: "search" });
    FILTERS.forEach(function (spec) {
      var id = spec[0], counts = new Map(), labels = new Map();
      S.rows.forEach(function (r) {
        var v = spec[2](r);
        if (!v) return;
        counts.set(v, (counts.get(v) || 0) + 1);
        if (spec[3]) labels.set(v, spec[3](r));
      });
      if (counts.size === 0) return;
      if (counts.size > BIG_FILTER) {  // thousands of models: a box to type into, not a menu
        var box = h("input", { type: "search", "data-filter": id, "aria-label": spec[1], value: S.filters[id],
          placeholder: "contains\u2026 (" + counts.size.toLocaleString("en-US") + ")",
          on: { input: function () { S.filters[id] = box.value; S.page = 0; onChange(); } } });
        S.partial[id] = true;
        bar.appendChild(h("label", null, spec[1], box));
        return;
      }
      S.partial[id] = false;
      var select = h("select", { "data-filter": id, "aria-label": spec[1],
        on: { change: function () { S.filters[id] = select.value; S.page = 0; onChange(); } } },
        h("option", { value: "", text: "all (" + counts.size + ")" }));
      Array.from(counts.keys()).sort(function (a, b) {
        var x = labels.get(a) || a, y = labels.get(b) || b;
        return x < y ? -1 : x > y ? 1 : 0;
      }).forEach(function (v) {
        select.appendChild(h("option", { value: v, text: (labels.get(v) || v) + " (" + counts.get(v) + ")" }));
      });
      select.value = counts.has(S.filters[id]) ? S.filters[id] : "";
      S.filters[id] = select.value;
      bar.appendChild(h("label", null, spec[1], select));
    });
    var input = h("input", { type: "search", placeholder: "model, tag, error text\u2026", "data-filter": "q",
      "aria-label": "Text filter", value: S.filters.q,
      on: { input: function () { S.filters.q = input.value; S.page = 0; onChange(); } } });
    bar.appendChild(h("label", null, "Text", input));
    bar.appendChild(h("button", { type: "button", on: { click: function () {
      Object.keys(S.filters).forEach(function (k) { S.filters[k] = ""; });
      bar.querySelectorAll("select, input").forEach(function (el) { el.value = ""; });
      S.page = 0; onChange();
    } } }, "Clear filters"));
    return bar;
  }

  // ---------------------------------------------------------------- leaderboard
  function statusCell(r) {
    var parts = [];
    if (r.outcome) parts.push(h("span", { class: "badge status-" + r.outcome, title: "validation" }, r.outcome));
    if (r.validity) parts.push(" ", h("span", { class: "badge status-" + r.validity, title: "benchmark validity" }, r.validity));
    if (r.bench_status === "failed" || r.validate_status === "failed") parts.push(" ", h("span", { class: "badge status-failed" }, "failed"));
    if (r.reproduction) parts.push(" ", h("span", { class: "tag", title: "reproduction" }, "reproduction: " + r.reproduction));
    if (r.error) parts.push(h("div", { class: "sub status-failed", title: r.error }, short(r.error, 90)));
    return parts;
  }

  var COLUMNS = [
    { id: "name", label: "Model / solution", sortValue: function (r) { return r.name + "\u0000" + r.version; },
      cell: function (r) {
        var uid = r.bench_uid || r.validate_uid || r.other_uid;
        var links = [];
        if (r.bench_uid) links.push(h("a", { href: resultHref(r.bench_uid) }, "benchmark"));
        if (r.validate_uid) links.push(links.length ? " \u00B7 " : "", h("a", { href: resultHref(r.validate_uid) }, "validation"));
        if (r.other_uid) links.push(h("a", { href: resultHref(r.other_uid) }, r.other_action || "result"));
        var name = uid ? h("a", { href: resultHref(uid), class: "subject" }, r.name) : h("span", { class: "subject" }, r.name);
        return [name, " ", h("span", { class: "sub" }, r.version),
                r.kind === "solution" ? h("span", { class: "tag" }, "solution") : null,
                arr(r.tags).length ? h("div", null, arr(r.tags).map(function (t) { return h("span", { class: "tag" }, t); })) : null,
                h("div", { class: "sub" }, links)];
      } },
    { id: "task", label: "Task", title: "the model's task; below it the dataset of the accuracy figure (else of the benchmark's inputs)",
      cell: function (r) { return [r.task || DASH, r.dataset ? h("div", { class: "sub", "data-part": "dataset" }, r.dataset) : null]; } },
    { id: "backend", label: "Backend", cell: function (r) { return [r.backend, " ", h("span", { class: "sub" }, r.backend_version)]; } },
    { id: "variant", label: "Variant" },
    { id: "precision", label: "Precision" },
    { id: "platform_label", label: "Platform", cell: function (r) { return emulatedPlatformCell(r); } },
    { id: "scenario", label: "Scenario, config", sortValue: function (r) { return r.scenario + "\u0000" + r.config; },
      title: "the benchmark scenario; below it the run's configuration beyond the other columns (threads, batch size, engine, inputs, backend options; defaults left out)",
      cell: function (r) {
        return [r.scenario || DASH, r.config ? h("div", { class: "config mono", "data-part": "config", title: r.config }, short(r.config, 80)) : null];
      } },
    { id: "top1", label: "Top-1", num: true, desc: true, fmt: fmtPct },
    { id: "p50_ns", label: "p50", num: true, fmt: fmtDur },
    { id: "p99_ns", label: "p99", num: true, fmt: fmtDur },
    { id: "throughput", label: "Throughput", num: true, desc: true, fmt: fmtRate, title: "samples per second" },
    { id: "peak_rss", label: "Peak memory", num: true, fmt: fmtBytes, title: "peak resident set size of the benchmark process" },
    { id: "energy_j", label: "Energy", num: true, fmt: fmtEnergy, title: "joules per sample", optional: true },
    { id: "runs", label: "Runs", num: true, desc: true, fmt: fmtInt },
    { id: "latest", label: "Latest", desc: true, fmt: fmtDate },
    { id: "status", label: "Status", sortValue: function (r) { return r.error ? 0 : 1; }, cell: statusCell }
  ];
  addDetectionColumns(COLUMNS);
  var COLUMN_BY_ID = {};
  COLUMNS.forEach(function (c) { COLUMN_BY_ID[c.id] = c; });

  // -- emulated platforms (QEMU user-mode roots): the label says so, a tag makes it plain --
  var EMULATED_LABEL = / \[emulated: ([^\]]*)\]$/;
  function emulatedPlatformCell(r) {
    var label = r.platform_label || "", m = EMULATED_LABEL.exec(label);
    if (!m) return label;
    return [label.slice(0, m.index), " ", h("span", { class: "tag", "data-part": "emulated",
      title: "emulated (" + m[1] + "): its figures say how fast the emulator runs the code, not how fast the board is" }, "emulated")];
  }

  function visibleColumns() {
    return COLUMNS.filter(function (c) {
      return !c.optional || S.rows.some(function (r) { return isNum(r[c.id]); });
    });
  }

  function renderLeaderboard(main) {
    var columns = visibleColumns();
    var headRow = h("tr", null, h("th", { scope: "col", title: "select to compare" }, ""));
    var compareButton = h("button", { type: "button", class: "primary", "data-action": "compare", disabled: true,
      on: { click: function () { location.hash = compareHref(selectedUids()); } } }, "Compare selected");
    var selectionNote = h("span", { class: "sub" });
    var tbody = h("tbody");
    var table = h("table", { class: "board", id: "leaderboard" }, h("thead", null, headRow), tbody);
    var pager = h("div", { class: "pager", "data-pager": "bottom" });
    var topPager = h("div", { class: "pager", "data-pager": "top" });

    columns.forEach(function (c) {
      var th = h("th", { scope: "col", class: "sortable" + (c.num ? " num" : ""), "data-col": c.id, title: c.title || null,
        on: { click: function () {
          if (S.sort.col === c.id) S.sort.dir = -S.sort.dir;
          else { S.sort.col = c.id; S.sort.dir = c.desc ? -1 : 1; }
          S.page = 0; refresh();
        } } }, c.label);
      headRow.appendChild(th);
    });

    function selectedUids() {
      return S.rows.filter(function (r) { return S.selected.has(r.i); })
        .map(function (r) { return r.bench_uid || r.validate_uid || r.other_uid; }).filter(Boolean);
    }
    function updateSelection() {
      var n = S.selected.size;
      compareButton.disabled = n < 2;
      compareButton.textContent = "Compare selected (" + n + ")";
      selectionNote.textContent = n < 2 ? "select two or more rows to compare" : "";
    }

    function refresh() {
      var rows = filteredRows();
      var pages = Math.max(1, Math.ceil(rows.length / S.pageSize));
      S.page = Math.min(S.page, pages - 1);
      var start = S.page * S.pageSize, shown = rows.slice(start, start + S.pageSize);
      headRow.querySelectorAll("th[data-col]").forEach(function (th) {
        var col = th.getAttribute("data-col");
        if (col === S.sort.col) th.setAttribute("aria-sort", S.sort.dir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
      var body = document.createDocumentFragment();
      shown.forEach(function (r) {
        var box = h("input", { type: "checkbox", "aria-label": "select for comparison", checked: S.selected.has(r.i),
          on: { change: function () { if (box.checked) S.selected.add(r.i); else S.selected.delete(r.i); updateSelection(); } } });
        var tr = h("tr", { "data-row": r.i }, h("td", null, box));
        columns.forEach(function (c) {
          var content = c.cell ? c.cell(r) : (c.fmt ? c.fmt(r[c.id]) : (r[c.id] || DASH));
          tr.appendChild(h("td", { class: c.num ? "num" : null, "data-col": c.id,
            "data-value": c.num && isNum(r[c.id]) ? r[c.id] : null }, content));
        });
        body.appendChild(tr);
      });
      clear(tbody);
      tbody.appendChild(body);
      if (!rows.length) {
        tbody.appendChild(h("tr", null, h("td", { colspan: columns.length + 1, class: "note" },
          S.rows.length ? "No row matches the filters." : "No results yet.")));
      }
      table.setAttribute("data-total", rows.length);
      hook.rowsTotal = S.rows.length;
      hook.rowsFiltered = rows.length;
      hook.rowsShown = shown.length;
      fillPager(pager, rows, start, shown, pages);
      fillPager(topPager, rows, start, shown, pages);
      if (hook.firstRowsAt === null && shown.length) hook.firstRowsAt = performance.now();
    }

    function fillPager(pager, rows, start, shown, pages) {
      clear(pager);
      pager.appendChild(h("span", { "data-pager": "range" }, rows.length
        ? "Rows " + fmtInt(start + 1) + "\u2013" + fmtInt(start + shown.length) + " of " + fmtInt(rows.length) +
          (rows.length !== S.rows.length ? " (filtered from " + fmtInt(S.rows.length) + ")" : "")
        : "0 rows"));
      pager.appendChild(h("button", { type: "button", "data-action": "prev", disabled: S.page === 0,
        on: { click: function () { S.page--; refresh(); } } }, "\u2039 Previous"));
      pager.appendChild(h("span", null, "page " + (S.page + 1) + " of " + pages));
      pager.appendChild(h("button", { type: "button", "data-action": "next", disabled: S.page >= pages - 1,
        on: { click: function () { S.page++; refresh(); } } }, "Next \u203A"));
      var size = h("select", { "aria-label": "rows per page", on: { change: function () {
        S.pageSize = parseInt(size.value, 10); S.page = 0; refresh(); } } },
        [50, 100, 500].map(function (n) { return h("option", { value: n, text: n + " per page" }); }));
      size.value = String(S.pageSize);
      pager.appendChild(size);
    }

    main.appendChild(h("h1", null, "Leaderboard"));
    main.appendChild(h("p", { class: "note" }, "One row per model or solution, backend, variant, precision, platform, " +
      "scenario and run configuration (Config: threads, batch size, engine, inputs, backend options): the latest benchmark " +
      "joined with the latest validation of the same configuration and dataset. Click a column to sort."));
    main.appendChild(filterBar(refresh));
    main.appendChild(h("div", { class: "toolbar" }, compareButton, selectionNote));
    main.appendChild(topPager);
    main.appendChild(h("div", { class: "table-wrap" }, table));
    main.appendChild(pager);
    updateSelection();
    refresh();
  }

  // ---------------------------------------------------------------- detection (COCO AP)
  // Detection validations carry COCO AP@[.5:.95] and AP50 (pycocotools, cr.runtime.coco_eval):
  // two leaderboard columns, shown when some row has them, and a Pareto plot of p50 latency
  // against AP50 (one frontier per task, dataset and platform, like the top-1 plots).
  function addDetectionColumns(columns) {
    var at = columns.findIndex(function (c) { return c.id === "top1"; }) + 1;
    columns.splice(at, 0,
      { id: "ap", label: "AP", num: true, desc: true, fmt: fmtPct, optional: true,
        title: "detection: COCO AP averaged over IoU 0.50:0.95 (pycocotools)" },
      { id: "ap50", label: "AP50", num: true, desc: true, fmt: fmtPct, optional: true,
        title: "detection: COCO AP at IoU 0.5" });
  }
  function addDetectionPlots(measures, plots) {
    measures.ap50 = { title: "AP50 (%, detection)", better: 1, log: false, percent: true, what: "an AP50", word: "more accurate",
                      get: function (r) { return isNum(r.ap50) && isNum(r.ap50 * 100) ? r.ap50 * 100 : null; } };
    var at = plots.findIndex(function (p) { return p[0] === "throughput"; }) + 1;
    plots.splice(at, 0, ["latency-ap50", "p50 latency vs AP50 (detection)", "p50", "ap50"]);
  }

  // ---------------------------------------------------------------- Pareto plot
  function colourMap(values, palette) {
    var m = new Map();
    values.forEach(function (v, i) { m.set(v, (palette || PALETTE)[i % (palette || PALETTE).length]); });
    return m;
  }
  function distinct(rows, f) {
    var s = new Set();
    rows.forEach(function (r) { s.add(f(r)); });
    return Array.from(s).sort();
  }
  var FRONTIER_COLOURS = ["#4b5563", "#9a3412", "#1e40af", "#166534", "#6b21a8", "#9f1239", "#0f766e", "#854d0e"];

  // What a plot can put on an axis: the value of a row (null when it has none that can be drawn),
  // the axis title, which way is better (1 higher, -1 lower) and whether a logarithmic axis suits it.
  var LINEAR_LIMIT = 1e12, LOG_LOW = 1e-200, LOG_HIGH = 1e200;  // beyond these a value is not drawn (and counted as left out)
  var MEASURES = {
    p50: { title: "p50 latency (ms, lower is better)", better: -1, log: true, what: "a p50 latency", word: "faster",
           get: function (r) { return isNum(r.p50_ns) && r.p50_ns > 0 ? r.p50_ns / 1e6 : null; } },
    throughput: { title: "throughput (samples/s, higher is better)", better: 1, log: true, what: "a throughput", word: "higher in throughput",
                  get: function (r) { return isNum(r.throughput) && r.throughput > 0 ? r.throughput : null; } },
    top1: { title: "top-1 accuracy (%)", better: 1, log: false, percent: true, what: "a top-1 accuracy", word: "more accurate",
            get: function (r) { return isNum(r.top1) && isNum(r.top1 * 100) ? r.top1 * 100 : null; } },
    memory: { title: "peak memory (MiB, lower is better)", better: -1, log: true, what: "a peak memory", word: "smaller in memory",
              get: function (r) { return isNum(r.peak_rss) && r.peak_rss > 0 ? r.peak_rss / 1048576 : null; } }
  };
  // Accuracy plots: one frontier per task, dataset and platform. Performance plots (every
  // benchmark, with or without an accuracy): one per task, scenario and platform.
  var PLOTS = [
    ["latency", "p50 latency vs top-1 accuracy", "p50", "top1"],
    ["throughput", "throughput vs top-1 accuracy", "throughput", "top1"],
    ["latency-throughput", "p50 latency vs throughput (every benchmark)", "p50", "throughput"],
    ["latency-memory", "p50 latency vs peak memory (every benchmark)", "p50", "memory"]
  ];
  addDetectionPlots(MEASURES, PLOTS);
  var PLOT_BY_ID = {};
  PLOTS.forEach(function (p) { PLOT_BY_ID[p[0]] = { id: p[0], label: p[1], x: MEASURES[p[2]], y: MEASURES[p[3]], accuracy: p[3] === "top1" || p[3] === "ap50" }; });

  // Frontier of points best in y for x at least as good, as a staircase that runs on to the
  // edge of the group's points: with more latency to spare (less throughput needed) the best
  // figure stays what it was. xBetter / yBetter: 1 higher is better, -1 lower is better.
  function frontier(points, xBetter, yBetter) {
    var sorted = points.slice().sort(function (a, b) { return xBetter > 0 ? b.x - a.x : a.x - b.x; });
    var out = [], best = null;
    sorted.forEach(function (p) {
      if (best === null || (yBetter > 0 ? p.y > best : p.y < best)) { out.push({ x: p.x, y: p.y }); best = p.y; }
    });
    var edge = sorted[sorted.length - 1];
    if (out.length && edge.x !== out[out.length - 1].x) out.push({ x: edge.x, y: out[out.length - 1].y });
    return out.sort(function (a, b) { return a.x - b.x; });
  }

  // An axis range with room around the points, so that none sits on the frame (half of it
  // clipped): 6 % of the span each side (a factor on a logarithmic axis). An accuracy axis
  // spans at least 2 points, kept below 100 % where the points allow, so that points all at
  // one value (100 % say) are not squeezed against an edge.
  function axisRange(values, log, percent) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (v < lo) lo = v; if (v > hi) hi = v; });
    if (!(lo <= hi)) return log ? { min: 1, max: 10 } : { min: 0, max: 1 };
    if (log) {
      if (hi / lo < 1.01) { lo /= 1.5; hi *= 1.5; }
      var f = Math.pow(10, Math.max(0.05, (Math.log10(hi) - Math.log10(lo)) * 0.06));
      return { min: lo / f, max: hi * f };
    }
    if (percent && hi - lo < 2) {
      var need = 2 - (hi - lo), up = Math.max(0, Math.min(need / 2, 100 - hi));
      hi += up;
      lo -= need - up;
    }
    var span = hi - lo;
    if (!(span > Math.abs(hi) * 1e-9)) { var d = Math.abs(hi) * 0.05 || 1; lo -= d; hi += d; span = hi - lo; }
    return { min: lo - span * 0.06, max: hi + span * 0.06 };
  }

  // Ticks chosen here rather than by Chart.js (whose logarithmic axis labels every tick of
  // the last decades, "5.0006.000"): on a logarithmic axis 1, 2 and 5 times powers of ten
  // (only the powers when that makes more than 9, every n-th power beyond 9 decades); on a
  // linear axis about 6 steps of 1, 2, 2.5 or 5 times a power of ten. Labels show the digits
  // the step needs and no more. accuracy: no tick beyond 0-100 %.
  function niceStep(span, count) {
    var raw = span / count, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    var nice = m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10;
    return { step: nice * p, decimals: Math.max(0, -Math.floor(Math.log10(nice * p)) + (nice === 2.5 ? 1 : 0)) };
  }
  function fmtTickValue(v, decimals) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e15 || a < 1e-6) return v.toExponential(decimals === undefined ? 1 : Math.min(3, Math.max(0, decimals)));
    if (decimals === undefined) return String(+v.toPrecision(3));
    return v.toLocaleString("en-US", { minimumFractionDigits: Math.min(20, decimals), maximumFractionDigits: Math.min(20, decimals) });
  }
  function linearTicks(min, max, count, bounded) {
    if (!(max > min) || !isFinite(max - min)) return { ticks: [], decimals: 0 };
    var s = niceStep(max - min, count), out = [];
    var first = Math.ceil(min / s.step), last = Math.floor(max / s.step);
    for (var k = first; k <= last && out.length < 50; k++) {
      var v = k * s.step;
      if (!bounded || (v >= 0 && v <= 100)) out.push(v);
    }
    return { ticks: out, decimals: s.decimals };
  }
  function logTicks(min, max) {
    var a = Math.floor(Math.log10(min)), b = Math.ceil(Math.log10(max)), out = [];
    var every = Math.max(1, Math.ceil((b - a) / 9));
    for (var set = 0; set < 3; set++) {  // 1-2-5, else 1-3, else the powers of ten alone
      var mantissas = [[1, 2, 5], [1, 3], [1]][set];
      out = [];
      for (var e = a; e <= b; e++) {
        if ((e - a) % every) continue;
        mantissas.forEach(function (m) {
          var v = +(m * Math.pow(10, e)).toPrecision(1);
          if (v >= min && v <= max) out.push(v);
        });
      }
      if (out.length <= 9) break;
    }
    return out.length < 2 ? null : out;  // fewer: a narrow range, which linear steps label better
  }
  function axisOptions(measure, log, range) {
    var format = { decimals: undefined };
    return {
      type: log ? "logarithmic" : "linear", min: range.min, max: range.max, bounds: "data",
      title: { display: true, text: measure.title },
      ticks: { maxRotation: 0, minRotation: 0, autoSkip: true, autoSkipPadding: 12, includeBounds: false,
               callback: function (value) { return fmtTickValue(Number(value), format.decimals); } },
      afterBuildTicks: function (scale) {
        var values = log ? logTicks(range.min, range.max) : null;
        if (values) format.decimals = undefined;
        else {
          var lin = linearTicks(range.min, range.max, 6, measure.percent);
          values = lin.ticks;
          format.decimals = lin.decimals;
        }
        scale.ticks = values.map(function (v) { return { value: v }; });
      }
    };
  }

  function renderPareto(main) {
    var token = S.token;
    var backends = distinct(S.rows, function (r) { return r.backend; });
    var platforms = distinct(S.rows, function (r) { return r.platform; });
    var colours = colourMap(backends);
    var shapes = new Map(), dashes = new Map(), platformLabel = new Map();
    platforms.forEach(function (p, i) { shapes.set(p, SHAPES[i % SHAPES.length]); dashes.set(p, DASHES[i % DASHES.length]); });
    S.rows.forEach(function (r) { platformLabel.set(r.platform, r.platform_label); });
    if (!PLOT_BY_ID[S.paretoX]) {  // first visit: the accuracy plot, unless no row has an accuracy to plot
      S.paretoX = S.rows.some(function (r) { return MEASURES.top1.get(r) !== null && MEASURES.p50.get(r) !== null; })
        || !S.rows.some(function (r) { return MEASURES.p50.get(r) !== null; }) ? "latency" : "latency-throughput";
    }

    var axis = h("select", { "data-control": "x-axis", "aria-label": "what to plot", on: { change: function () {
      S.paretoX = axis.value; draw(); } } },
      PLOTS.map(function (p) { return h("option", { value: p[0], text: p[1] }); }));
    axis.value = S.paretoX;
    var logBox = h("input", { type: "checkbox", "data-control": "log", checked: S.paretoLog,
      on: { change: function () { S.paretoLog = logBox.checked; draw(); } } });
    var legend = h("div", { class: "legend", id: "pareto-legend" });
    var hover = h("div", { class: "hover-row", id: "pareto-hover" }, h("span", { class: "note" }, "Hover a point to see its row; click it to open the result."));
    var note = h("p", { class: "note", id: "pareto-note" });
    var canvas = h("canvas", { id: "pareto-canvas", role: "img", "aria-label": "Pareto plot" });
    var box = h("div", { class: "chart-box", id: "pareto", "data-points": 0 }, canvas);

    main.appendChild(h("h1", null, "Pareto plot"));
    main.appendChild(filterBar(draw));
    main.appendChild(h("div", { class: "toolbar" }, h("label", null, "Plot ", axis),
      h("label", null, logBox, " logarithmic axes (latency, throughput, memory)")));
    main.appendChild(legend);
    main.appendChild(hover);
    main.appendChild(box);
    main.appendChild(note);

    function rowLines(r) {
      return [r.name + " " + r.version + (r.scenario ? " (" + r.scenario + ")" : ""),
              r.backend + " " + r.backend_version + ", " + (r.variant || "") + (r.precision ? " " + r.precision : "") +
                (r.config ? " [" + r.config + "]" : ""),
              r.platform_label + (r.task || r.dataset ? " \u00B7 " + [r.task, r.dataset].filter(Boolean).join(", ") : ""),
              "top-1 " + fmtPct(r.top1) + ", p50 " + fmtDur(r.p50_ns) + ", " + fmtRate(r.throughput) + ", " + fmtBytes(r.peak_rss)];
    }

    function draw() {
      if (token !== S.token) return;
      track(loadChart().then(function (Chart) {
        if (token !== S.token) return;
        var plot = PLOT_BY_ID[S.paretoX] || PLOT_BY_ID.latency;
        var xLog = S.paretoLog && plot.x.log, yLog = S.paretoLog && plot.y.log;
        var rows = filteredRows();
        var sets = new Map(), groups = new Map(), count = 0, missing = 0, plotted = [];
        rows.forEach(function (r) {
          var x = plot.x.get(r), y = plot.y.get(r);
          if (x === null || y === null || !drawable(x, xLog) || !drawable(y, yLog)) { missing++; return; }
          var k = r.backend + "\u0000" + r.platform;
          if (!sets.has(k)) sets.set(k, { backend: r.backend, platform: r.platform, data: [] });
          var p = { x: x, y: y, row: r.i };
          sets.get(k).data.push(p);
          var line = plot.accuracy ? [r.task || "no task", r.dataset || "no dataset"] : [r.task || "no task", r.scenario || "no scenario"];
          var gk = line.concat([r.platform]).join("\u0000");
          if (!groups.has(gk)) groups.set(gk, { line: line.join("\u0000"), lineLabel: line.join(" \u00B7 "), platform: r.platform, points: [] });
          groups.get(gk).points.push(p);
          plotted.push(r.i);
          count++;
        });
        var lineColours = colourMap(distinct(Array.from(groups.values()), function (g) { return g.line; }), FRONTIER_COLOURS);
        var datasets = [];
        Array.from(sets.values()).sort(function (a, b) {
          return a.backend < b.backend ? -1 : a.backend > b.backend ? 1 : a.platform < b.platform ? -1 : a.platform > b.platform ? 1 : 0;
        }).forEach(function (s) {
          var colour = colours.get(s.backend);
          datasets.push({ type: "scatter", label: s.backend + " on " + platformLabel.get(s.platform), data: s.data,
            pointStyle: shapes.get(s.platform)[0], backgroundColor: colour + "b0", borderColor: colour,
            borderWidth: 1.5, pointRadius: count > 5000 ? 2.5 : 5, pointHoverRadius: 8, crKind: "points" });
        });
        var frontiers = [];
        Array.from(groups.keys()).sort().forEach(function (gk) {
          var g = groups.get(gk), f = frontier(g.points, plot.x.better, plot.y.better);
          if (f.length < 1) return;
          var label = "frontier " + g.lineLabel + " on " + platformLabel.get(g.platform);
          frontiers.push({ label: label, line: g.lineLabel, platform: g.platform, points: f.length, from: g.points.length });
          datasets.push({ type: "line", label: label, data: f, borderColor: lineColours.get(g.line), borderDash: dashes.get(g.platform),
            borderWidth: 1.5, pointRadius: 0, pointHoverRadius: 0, stepped: plot.x.better < 0 ? "after" : "before",
            fill: false, crKind: "frontier" });
        });
        var xs = [], ys = [];
        groups.forEach(function (g) { g.points.forEach(function (p) { xs.push(p.x); ys.push(p.y); }); });
        destroyCharts();
        var chart = new Chart(canvas, {
          data: { datasets: datasets },
          options: {
            parsing: false, normalized: true,
            interaction: { mode: "nearest", intersect: true },
            scales: {
              x: axisOptions(plot.x, xLog, axisRange(xs, xLog, plot.x.percent)),
              y: axisOptions(plot.y, yLog, axisRange(ys, yLog, plot.y.percent))
            },
            plugins: {
              legend: { display: false },
              tooltip: {
                filter: function (item) { return item.dataset.crKind === "points"; },
                callbacks: {
                  title: function () { return ""; },
                  label: function (item) { return rowLines(S.rows[item.raw.row]); }
                }
              }
            },
            onHover: function (evt, elements) {
              var el = elements.filter(function (e) { return chart.data.datasets[e.datasetIndex].crKind === "points"; })[0];
              clear(hover);
              if (!el) { add(hover, h("span", { class: "note" }, "Hover a point to see its row; click it to open the result.")); return; }
              var r = S.rows[chart.data.datasets[el.datasetIndex].data[el.index].row];
              add(hover, [h("strong", null, rowLines(r)[0]), h("div", null, rowLines(r).slice(1).join(" \u00B7 "))]);
              hover.setAttribute("data-row", r.i);
            },
            onClick: function (evt, elements) {
              var el = elements.filter(function (e) { return chart.data.datasets[e.datasetIndex].crKind === "points"; })[0];
              if (!el) return;
              var r = S.rows[chart.data.datasets[el.datasetIndex].data[el.index].row];
              var uid = r.bench_uid || r.validate_uid || r.other_uid;
              if (uid) location.hash = resultHref(uid);
            }
          }
        });
        S.charts.push(chart);
        var drawn = 0;
        chart.data.datasets.forEach(function (d, i) { if (d.crKind === "points") drawn += chart.getDatasetMeta(i).data.length; });
        box.setAttribute("data-points", count);
        box.setAttribute("data-drawn", drawn);
        box.setAttribute("data-plot", plot.id);
        box.setAttribute("data-frontiers", frontiers.length);
        hook.paretoPoints = count;
        hook.pareto = describeChart(Chart, chart, plot, plotted, frontiers);
        note.textContent = fmtInt(count) + (count === 1 ? " point" : " points") + (missing ? "; " + fmtInt(missing) +
          (missing === 1 ? " row is" : " rows are") + " left out because " + (missing === 1 ? "it lacks " : "they lack ") +
          plot.x.what + " or " + plot.y.what + " that can be drawn" : "") + ". Lines: the Pareto frontier of each " +
          (plot.accuracy ? "task, dataset and platform" : "task, scenario and platform") + " (no other point of the same is both " +
          plot.x.word + " and " + plot.y.word + ")." +
          (plot.accuracy && count === 0 && S.rows.some(function (r) { return MEASURES.p50.get(r) !== null; })
            ? " No benchmark here has an accuracy: choose \u201Cp50 latency vs throughput\u201D to see them." : "");
        drawLegend(legend, backends.filter(function (b) { return rows.some(function (r) { return r.backend === b; }); }),
          platforms.filter(function (p) { return Array.from(groups.values()).some(function (g) { return g.platform === p; }); }),
          colours, shapes, dashes, platformLabel, lineColours, plot);
      }));
    }
    draw();
  }

  function drawable(v, log) { return log ? v > LOG_LOW && v < LOG_HIGH : Math.abs(v) <= LINEAR_LIMIT; }

  // What the chart drew, in pixels, for the tests (and anyone curious): the plot area, each
  // point, each tick label's box, the axis ranges and the frontiers.
  function describeChart(Chart, chart, plot, plotted, frontiers) {
    var area = chart.chartArea, ctx = chart.ctx, out = { plot: plot.id, rows: plotted, frontiers: frontiers,
      area: { left: area.left, top: area.top, right: area.right, bottom: area.bottom }, points: [] };
    chart.data.datasets.forEach(function (d, i) {
      if (d.crKind !== "points") return;
      chart.getDatasetMeta(i).data.forEach(function (el, j) {
        out.points.push({ row: d.data[j].row, x: el.x, y: el.y, r: d.pointRadius });
      });
    });
    ["x", "y"].forEach(function (id) {
      var scale = chart.scales[id], font = Chart.helpers.toFont(scale.options.ticks.font);
      ctx.save();
      ctx.font = font.string;
      out[id] = { type: scale.type, min: scale.min, max: scale.max, rotation: scale.labelRotation || 0, labels: [] };
      scale.ticks.forEach(function (tick, i) {
        var label = Array.isArray(tick.label) ? tick.label.join(" ") : String(tick.label === undefined ? "" : tick.label);
        if (!label) return;
        var at = scale.getPixelForTick(i), w = ctx.measureText(label).width;
        out[id].labels.push(id === "x" ? { text: label, value: tick.value, left: at - w / 2, right: at + w / 2 }
                                       : { text: label, value: tick.value, top: at - font.lineHeight / 2, bottom: at + font.lineHeight / 2 });
      });
      ctx.restore();
    });
    return out;
  }

  function drawLegend(legend, backends, platforms, colours, shapes, dashes, platformLabel, lineColours, plot) {
    clear(legend);
    legend.appendChild(h("div", { class: "group" }, h("span", { class: "title" }, "Backend (colour):"),
      backends.map(function (b) {
        var sw = h("span", { class: "swatch" });
        sw.style.background = colours.get(b);
        return h("span", { class: "item", "data-legend": "backend" }, sw, b);
      })));
    legend.appendChild(h("div", { class: "group" }, h("span", { class: "title" }, "Platform (shape, frontier dashes):"),
      platforms.map(function (p) {
        var dash = dashes.get(p).length ? " (" + (dashes.get(p).join("-")) + " dashes)" : " (solid)";
        return h("span", { class: "item", "data-legend": "platform" }, h("span", { class: "shape" }, shapes.get(p)[1]),
          platformLabel.get(p), h("span", { class: "sub" }, dash));
      })));
    var lines = Array.from(lineColours.keys());
    if (lines.length) {
      legend.appendChild(h("div", { class: "group" }, h("span", { class: "title" },
        plot.accuracy ? "Frontier (line colour: task \u00B7 dataset):" : "Frontier (line colour: task \u00B7 scenario):"),
        lines.map(function (l) {
          var sw = h("span", { class: "swatch line" });
          sw.style.background = lineColours.get(l);
          return h("span", { class: "item", "data-legend": "frontier" }, sw, l.split("\u0000").join(" \u00B7 "));
        })));
    }
  }

  function destroyCharts() {
    S.charts.forEach(function (c) { try { c.destroy(); } catch (e) { /* already gone */ } });
    S.charts = [];
  }

  // ---------------------------------------------------------------- result detail
  function kv(pairs, cls) {
    return h("table", { class: "kv" + (cls ? " " + cls : "") }, h("tbody", null, pairs.filter(Boolean).map(function (p) {
      return h("tr", null, h("th", { scope: "row" }, txt(p[0])), h("td", null, isMarkup(p[1]) ? p[1] : fmtAny(p[1])));
    })));
  }

  // Nodes built here (or lists holding some) are shown as they are; anything else is data, shown as text.
  function isMarkup(x) {
    return x instanceof Node || (Array.isArray(x) && x.some(function (e) { return e instanceof Node; }));
  }

  // A table of the objects in list (anything else in it is left out); columns: [key, title, formatter(value, object)].
  function objectTable(list, columns, cls) {
    list = arr(list).filter(function (x) { return x && typeof x === "object" && !Array.isArray(x); });
    if (!columns) {
      var seen = [];
      list.forEach(function (o) { Object.keys(o).forEach(function (k) { if (seen.indexOf(k) < 0 && seen.length < 10) seen.push(k); }); });
      columns = seen.map(function (k) { return [k, k]; });
    }
    return h("div", { class: "table-wrap" }, h("table", { class: cls || null },
      h("thead", null, h("tr", null, columns.map(function (c) { return h("th", { scope: "col" }, c[1]); }))),
      h("tbody", null, list.map(function (o) {
        return h("tr", null, columns.map(function (c) {
          var v = typeof c[2] === "function" ? c[2](o[c[0]], o) : o[c[0]];
          return h("td", null, isMarkup(v) ? v : fmtAny(v));
        }));
      }))));
  }

  function badge(label) {
    if (label === null || label === undefined || label === "" || label === false) return null;
    label = txt(label);
    return h("span", { class: "badge status-" + label.replace(/[^A-Za-z0-9_-]/g, "") }, label);
  }
  function pre(value) { return h("pre", null, typeof value === "string" ? value : JSON.stringify(value, null, 2)); }
  function steps(list) { return pre(Array.isArray(list) ? list.map(function (x) { return JSON.stringify(x); }).join("\n") : list === null || list === undefined ? DASH : list); }
  function section(title, id) { return h("section", { id: id || null }, h("h2", null, title)); }
  function joined(list, sep) { return Array.isArray(list) ? list.map(txt).join(sep || ", ") : txt(list); }

  function subjectOf(rec) { return obj(arr(rec.components)[0]); }
  function titleOf(rec) {
    var c = subjectOf(rec), b = obj(rec.backend);
    return txt(c.name || c.ref || "unknown") + " " + txt(c.version) + " \u2014 " + txt(rec.action || "result") + " on " + txt(b.name || "?");
  }

  function renderResult(main, uid) {
    var token = S.token;
    main.appendChild(h("p", { class: "note" }, "Loading result " + uid + "\u2026"));
    track(loadResult(uid).then(function (rec) {
      if (token !== S.token) return;
      clear(main);
      resultPage(main, rec, token);
    }, function () {
      if (token !== S.token) return;
      clear(main);
      main.appendChild(h("h1", null, "Result not found"));
      main.appendChild(h("p", { class: "error-box" }, "This site has no result " + uid + ". " +
        "It may come from another build; rebuild with cr dashboard build."));
      main.appendChild(h("p", null, h("a", { href: "#/leaderboard" }, "Back to the leaderboard")));
    }));
  }

  function resultPage(main, rec, token) {
    var m = rec.metrics && typeof rec.metrics === "object" && !Array.isArray(rec.metrics) ? rec.metrics : null;
    var v = rec.validation && typeof rec.validation === "object" && !Array.isArray(rec.validation) ? rec.validation : null;
    var err = rec.error && typeof rec.error === "object" && !Array.isArray(rec.error) ? rec.error : null;
    var backend = obj(rec.backend), info = obj(backend.info), pipeline = obj(rec.pipeline), config = obj(rec.config);
    document.title = titleOf(rec) + " \u00B7 reefkit results";
    main.setAttribute("data-result", rec.uid);
    main.appendChild(h("p", { class: "sub" }, h("a", { href: "#/leaderboard" }, "\u2039 Leaderboard")));
    main.appendChild(h("h1", null, titleOf(rec), " ", badge(rec.status), " ", m ? badge(m.validity) : null, " ", v ? badge(v.outcome) : null));

    var rows = rowsFor(rec);
    var scenario = m ? txt(m.scenario) : "";
    var row = rows[0] && [rows[0].bench_uid, rows[0].validate_uid, rows[0].other_uid].indexOf(rec.uid) >= 0 ? rows[0]
      : rows.filter(function (r) { return !m || r.scenario === scenario; })[0] || rows[0];
    var companion = row ? (rec.action === "benchmark" ? row.validate_uid : row.bench_uid) : "";
    var overview = [
      ["uid", h("span", { class: "mono" }, rec.uid)],
      ["action", rec.action], ["status", rec.status],
      ["subject", subjectOf(rec).ref],
      row && row.task ? ["task", row.task] : null,
      ["backend", txt(backend.name) + (info.version ? " " + txt(info.version) : "")],
      ["variant / precision", txt(pipeline.variant || config.variant || DASH) + " / " + txt(pipeline.precision || DASH)],
      row && row.config ? ["config", h("span", { class: "mono" }, row.config)] : null,
      row && row.dataset ? ["dataset", row.dataset] : null,
      ["platform", row ? row.platform_label : txt(obj(rec.platform).fingerprint || DASH)],
      ["started", rec.started], ["ended", rec.ended], ["cr version", rec.cr_version],
      ["source file", rec.dashboard_source],
      arr(rec.tags).length ? ["tags", arr(rec.tags).map(function (t) { return h("span", { class: "tag" }, txt(t)); })] : null,
      companion && companion !== rec.uid ? [rec.action === "benchmark" ? "validation" : "benchmark",
        [h("a", { href: resultHref(companion) }, companion), " ",
         h("a", { href: compareHref([rec.uid, companion]) }, "(compare)")]] : null,
      row && rec.action === "benchmark" && isNum(row.top1) ? ["accuracy (latest validation)", fmtPct(row.top1)] : null
    ];
    main.appendChild(kv(overview, "overview"));

    if (err) {
      var es = section("Error", "error");
      es.appendChild(h("div", { class: "error-box" }, h("strong", null, txt(err.type || err.kind || "error")), ": ", txt(err.message)));
      if (err.hint) es.appendChild(h("p", null, "Hint: ", txt(err.hint)));
      if (err.stderr_tail) es.appendChild(pre(txt(err.stderr_tail)));
      main.appendChild(es);
    }
    if (rec.reproduction !== undefined && rec.reproduction !== null) main.appendChild(reproductionSection(rec.reproduction));
    if (m) main.appendChild(metricsSection(m));
    if (m) trustPhases(main, m);
    if (rec.raw && typeof rec.raw === "object" && Array.isArray(rec.raw.samples_ns)) main.appendChild(latencySection(rec, token));
    if (v) main.appendChild(validationSection(v));
    if (rec.machine || (m && (m.energy || m.memory))) main.appendChild(machineSection(rec));
    if (rec.action === "profile" && rec.profile) main.appendChild(profileSection(rec));
    if (rec.parity && typeof rec.parity === "object") {
      var parity = obj(rec.parity), ps = section("Parity", "parity");
      ps.appendChild(kv([["outcome", badge(parity.outcome)], ["tolerance", parity.tolerance]]));
      ps.appendChild(objectTable(parity.pairs, [["backends", "Backends", function (b) { return joined(b, " vs "); }],
        ["samples", "Samples"], ["max_abs_diff", "Max abs diff"], ["top1_agreement", "Top-1 agreement"], ["ok", "OK"]]));
      main.appendChild(ps);
    }
    main.appendChild(softwareSection(rec));

    var cs = section("Configuration", "config");
    cs.appendChild(kv(Object.keys(config).map(function (k) { return [k, config[k]]; })));
    main.appendChild(cs);

    var two = h("div", { class: "cols-2" });
    var bs = section("Backend", "backend");
    bs.appendChild(kv([["name", backend.name], ["entry", backend.entry], ["origin", backend.origin], ["options", backend.options]]
      .concat(Object.keys(info).map(function (k) { return [k, info[k]]; }))));
    two.appendChild(bs);
    two.appendChild(platformSection(obj(rec.platform)));
    main.appendChild(two);

    if (rec.pipeline && typeof rec.pipeline === "object") {
      var pls = section("Pipeline", "pipeline");
      pls.appendChild(kv([["variant", pipeline.variant], ["precision", pipeline.precision],
        ["sha256", h("span", { class: "mono" }, txt(pipeline.sha256 || DASH))],
        ["pre-processing", steps(pipeline.preprocess)], ["post-processing", steps(pipeline.postprocess)]]));
      if (rec.model_file && typeof rec.model_file === "object") {
        var mf = obj(rec.model_file);
        pls.appendChild(kv([["model file", mf.path], ["model sha256", h("span", { class: "mono" }, txt(mf.sha256 || DASH))]]));
      }
      main.appendChild(pls);
    }
    var comp = section("Components", "components");
    comp.appendChild(objectTable(rec.components, [["ref", "Ref"], ["uid", "uid"], ["repo", "Repository"],
      ["sha256", "sha256", function (s) { return h("span", { class: "mono" }, short(txt(s), 20)); }]]));
    main.appendChild(comp);

    var hist = section("Runs of this configuration", "history");
    hist.appendChild(h("p", { class: "note" }, "Loading\u2026"));
    main.appendChild(hist);
    track(loadRuns().then(function (all) {
      if (token !== S.token) return;
      clear(hist);
      var key = all.keys.has(rec.uid) ? all.keys.get(rec.uid) : row ? row.key : null;
      var runs = key === null ? [] : all.byKey.get(key) || [];
      if (!runs.length) return;
      hist.appendChild(h("h2", null, "Runs of this configuration"));
      hist.appendChild(objectTable(runs.slice(0, 100), [
        ["time", "Time", fmtDate], ["action", "Action"], ["status", "Status", badge], ["scenario", "Scenario"],
        ["config", "Config"], ["p50_ns", "p50", fmtDur], ["throughput", "Throughput", fmtRate], ["top1", "Top-1", fmtPct],
        ["uid", "Result", function (u) { return u === rec.uid ? h("span", { class: "sub" }, "this one") :
          h("span", null, h("a", { href: resultHref(u) }, u), " ", h("a", { href: compareHref([rec.uid, u]) }, "(compare)")); }]
      ], "runs"));
      if (runs.length > 100) hist.appendChild(h("p", { class: "note" }, "The newest 100 of " + runs.length + " runs."));
    }, function () { clear(hist); add(hist, [h("h2", null, "Runs of this configuration"), h("p", { class: "note" }, "data/runs.js did not load.")]); }));

    var raw = section("Record", "record");
    raw.appendChild(h("details", null, h("summary", null, "The whole record as JSON (raw latencies shortened)"), pre(rec)));
    main.appendChild(raw);
  }

  function reproductionSection(repro) {
    var s = section("Reproduction", "reproduction");
    if (typeof repro !== "object") { s.appendChild(kv([["status", txt(repro)]])); return s; }
    var outcome = Array.isArray(repro) ? null : repro.outcome || repro.status;
    if (outcome) s.appendChild(h("p", null, badge(outcome)));
    var lists = [];
    s.appendChild(kv(Object.keys(repro).filter(function (k) {
      var x = repro[k];
      if (Array.isArray(x) && x.length && x[0] && typeof x[0] === "object") { lists.push(k); return false; }
      return true;
    }).map(function (k) { return [k, repro[k]]; })));
    lists.forEach(function (k) { s.appendChild(h("h3", null, k)); s.appendChild(objectTable(repro[k])); });
    return s;
  }

  function metricsSection(m) {
    var s = section("Metrics", "metrics");
    var lat = obj(m.latency_ns), tp = obj(m.throughput), server = obj(m.server), reasons = arr(m.invalid_reasons);
    var pairs = [
      ["scenario", txt(m.scenario) + (m.engine === "loadgen" ? " (MLPerf LoadGen)" : "")],
      ["validity", [badge(m.validity), reasons.length ? " " + joined(reasons, "; ") : ""]],
      ["queries", fmtCount(m.queries)],
      ["samples", fmtCount(m.samples) + (m.samples_per_query ? " (" + txt(m.samples_per_query) + " per query, batch " + txt(m.batch_size) + ")" : "")],
      ["duration", isNum(m.duration_s) ? m.duration_s.toFixed(3) + " s" : DASH],
      ["throughput", fmtRate(tp.samples_per_s) + " samples, " + fmtRate(tp.queries_per_s) + " queries"],
      ["noise (IQR / p50)", isNum(m.noise) ? m.noise.toFixed(3) + (m.noisy === true ? " (noisy)" : "") : DASH],
      ["peak memory (RSS)", fmtBytes(m.peak_rss_bytes)]
    ];
    var energy = isNum(obj(m.energy).joules_per_sample) ? m.energy.joules_per_sample : m.energy_j_per_sample;
    if (isNum(energy)) pairs.push(["energy", fmtEnergy(energy) + " per sample"]);
    if (m.server !== undefined && m.server !== null) {
      pairs.push(["server", typeof m.server !== "object" || Array.isArray(m.server) ? txt(m.server) :
        "target " + fmtAny(server.target_qps) + " q/s, achieved " + fmtRate(server.achieved_qps) +
        ", p99 " + fmtAny(server.p99_ms) + " ms (bound " + fmtAny(server.latency_bound_ms) + " ms)"]);
    }
    s.appendChild(h("div", { class: "cols-2" }, kv(pairs, "metrics"),
      kv(["min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "stdev", "iqr"].filter(function (k) { return k in lat; })
        .map(function (k) { return ["latency " + k, isNum(lat[k]) ? fmtDur(lat[k]) : lat[k]]; }), "latency")));
    return s;
  }

  // -- the machine's state, energy and memory of a benchmark (record.machine, metrics.energy/memory) --
  function machineSection(rec) {
    var s = section("Machine, energy and memory", "machine");
    var m = obj(rec.metrics), en = obj(m.energy), mem = obj(m.memory), mach = obj(rec.machine);
    var sum = obj(mach.summary), during = obj(mach.during);
    var pairs = [];
    if (en.label !== undefined) {
      pairs.push(["energy", en.label === "measured" && isNum(en.joules)
        ? [badge("measured"), " " + en.joules.toFixed(3) + " J over the " + txt(en.window || "run") + " (" + txt(en.source) + ")" +
           (isNum(en.avg_watts) ? ", " + en.avg_watts.toFixed(2) + " W average" : "") +
           (isNum(en.joules_per_sample) ? ", " + fmtEnergy(en.joules_per_sample) + " per sample" : "")]
        : txt(en.label)]);
    }
    [["peak RSS", "peak_rss_bytes"], ["USS", "uss_bytes"], ["PSS", "pss_bytes"], ["GPU memory", "gpu_bytes"]].forEach(function (k) {
      if (isNum(mem[k[1]])) pairs.push([k[0], fmtBytes(mem[k[1]])]);
    });
    if (mach.label) pairs.push(["machine", txt(mach.label)]);
    var share = function (x) { return isNum(x) ? (x * 100).toFixed(1) + " %" : DASH; };
    if (rec.machine && !mach.label) {
      pairs.push(["CPU governor", txt(sum.governor) || DASH]);
      pairs.push(["CPU frequency", isNum(during.freq_mhz_min) ? during.freq_mhz_min.toFixed(0) + " - " + fmtAny(during.freq_mhz_max) + " MHz" : DASH]);
      pairs.push(["other processes' CPU", share(sum.cpu_other_share) + " of the machine (the benchmark: " + share(during.cpu_child_share) + ")"]);
      pairs.push(["load average at start", isNum(sum.load_avg_start) ? sum.load_avg_start.toFixed(2) : DASH]);
      pairs.push(["throttled", sum.throttled === true ? badge("throttled") : sum.throttled === false ? "no" : DASH]);
      pairs.push(["max temperature", isNum(sum.temp_c_max) ? sum.temp_c_max.toFixed(1) + " °C" : DASH]);
      pairs.push(["swap activity", sum.swap_activity === true ? "yes (" + txt(during.swap_in_pages) + " pages in, " + txt(during.swap_out_pages) + " out)" : sum.swap_activity === false ? "none" : DASH]);
      pairs.push(["samples", txt(during.samples) + (isNum(during.interval_s) ? " every " + (during.interval_s * 1000).toFixed(0) + " ms" : "")]);
    }
    s.appendChild(kv(pairs, "machine"));
    ["start", "end"].forEach(function (k) {
      if (mach[k] && typeof mach[k] === "object") s.appendChild(h("details", null, h("summary", null, "Snapshot at the " + k), pre(mach[k])));
    });
    return s;
  }
  // -- end of the machine block --

  function latencySection(rec, token) {
    var raw = obj(rec.raw), s = section("Latency distribution", "latency");
    var values = arr(raw.samples_ns).map(Number).filter(function (x) { return isFinite(x); });
    if (raw.problem) s.appendChild(h("p", { class: "error-box" }, txt(raw.problem)));
    if (!values.length) { s.appendChild(h("p", { class: "note" }, "No raw samples in this record.")); return s; }
    var step = isNum(raw.step) && raw.step >= 1 ? raw.step : 1;
    s.appendChild(h("p", { class: "note" }, step > 1
      ? "From " + fmtInt(values.length) + " of " + fmtCount(raw.count) + " samples (one in every " + step + ", in time order); the percentiles above are exact."
      : "From all " + fmtInt(values.length) + " samples."));
    var boxes = [h("canvas", { id: "latency-histogram", role: "img", "aria-label": "latency histogram" }),
                 h("canvas", { id: "latency-cdf", role: "img", "aria-label": "latency CDF" }),
                 h("canvas", { id: "latency-series", role: "img", "aria-label": "latency over time" })];
    s.appendChild(h("div", { class: "charts" }, boxes.map(function (c) { return h("div", { class: "chart-small" }, c); })));
    track(loadChart().then(function (Chart) {
      if (token !== S.token) return;
      var sorted = values.slice().sort(function (a, b) { return a - b; });
      var ms = function (ns) { return ns / 1e6; };
      var hist = histogram(sorted, 40);
      S.charts.push(new Chart(boxes[0], {
        type: "bar",
        data: { labels: hist.labels, datasets: [{ label: "samples", data: hist.counts, backgroundColor: "#1f77b4", barPercentage: 1, categoryPercentage: 1 }] },
        options: { plugins: { legend: { display: false }, title: { display: true, text: "Histogram" + (hist.log ? " (log-spaced bins)" : "") } },
                   scales: { x: { title: { display: true, text: "latency (ms, bin start)" }, ticks: { maxRotation: 0, autoSkip: true, autoSkipPadding: 12 } },
                             y: { title: { display: true, text: "samples" } } } }
      }));
      var n = sorted.length, cdf = sorted.map(function (x, i) { return { x: ms(x), y: (i + 1) / n }; });
      var lat = obj(obj(rec.metrics).latency_ns);
      var marks = [["p50", 0.5], ["p90", 0.9], ["p99", 0.99], ["p99.9", 0.999]].filter(function (p) { return isNum(lat[p[0]]); })
        .map(function (p) { return { x: ms(lat[p[0]]), y: p[1], name: p[0] }; });
      var logX = sorted[0] > 0 && sorted[n - 1] / sorted[0] > 20;
      if (logX) marks = marks.filter(function (p) { return p.x > 0; });
      S.charts.push(new Chart(boxes[1], {
        type: "line",
        data: { datasets: [{ label: "CDF", data: cdf, borderColor: "#1f77b4", pointRadius: 0, borderWidth: 1.5, stepped: true },
                           { type: "scatter", label: "exact percentiles", data: marks, borderColor: "#d62728", backgroundColor: "#d62728", pointRadius: 4 }] },
        options: { parsing: false, plugins: { title: { display: true, text: "Cumulative distribution" },
                     tooltip: { callbacks: { label: function (item) { return (item.raw.name ? item.raw.name + ": " : "") + item.raw.x.toPrecision(4) + " ms, " + (item.raw.y * 100).toFixed(2) + " %"; } } } },
                   scales: { x: axisOptions({ title: "latency (ms)" }, logX, axisRange(cdf.map(function (p) { return p.x; }), logX)),
                             y: { min: 0, max: 1, title: { display: true, text: "fraction of samples" } } } }
      }));
      S.charts.push(new Chart(boxes[2], {
        type: "line",
        data: { datasets: [{ label: "latency", data: values.map(function (x, i) { return { x: i * step, y: ms(x) }; }),
                             borderColor: "#2ca02c", pointRadius: 0, borderWidth: 1 }] },
        options: { parsing: false, plugins: { legend: { display: false }, title: { display: true, text: "Latency over the run" } },
                   scales: { x: { type: "linear", title: { display: true, text: "query" }, ticks: { maxRotation: 0 } },
                             y: { title: { display: true, text: "latency (ms)" } } } }
      }));
      s.setAttribute("data-samples", values.length);
    }));
    return s;
  }

  function histogram(sorted, bins) {
    var lo = sorted[0], hi = sorted[sorted.length - 1];
    var log = lo > 0 && hi / lo > 20;
    var a = log ? Math.log(lo) : lo, b = log ? Math.log(hi) : hi;
    if (!(b > a)) b = a + 1;
    var width = (b - a) / bins, counts = new Array(bins).fill(0), labels = [];
    if (!(width > 0) || !isFinite(width)) width = 1;
    sorted.forEach(function (x) {
      var k = Math.floor(((log ? Math.log(x) : x) - a) / width);
      counts[Math.min(bins - 1, Math.max(0, isFinite(k) ? k : 0))]++;
    });
    for (var i = 0; i < bins; i++) {
      var edge = a + i * width;
      labels.push(fmtTickValue((log ? Math.exp(edge) : edge) / 1e6));
    }
    return { counts: counts, labels: labels, log: log };
  }

  function validationSection(v) {
    var s = section("Validation", "validation");
    var skip = { checks: 1, misses: 1, outcome: 1 };
    var pairs = [["outcome", badge(v.outcome)]];
    Object.keys(v).forEach(function (k) {
      if (skip[k]) return;
      var x = v[k];
      pairs.push([k, (k === "top1" || k === "top5") && isNum(x) ? fmtPct(x) : x]);
    });
    s.appendChild(kv(pairs, "validation"));
    if (arr(v.checks).length) {
      s.appendChild(h("h3", null, "Checks"));
      s.appendChild(objectTable(v.checks, [["metric", "Metric"], ["value", "Value"], ["expected", "Expected"],
        ["allowed", "Allowed difference"], ["diff", "Difference"], ["ok", "OK", function (ok) { return badge(ok === true ? "PASS" : ok === false ? "FAIL" : txt(ok)); }]], "checks"));
    }
    if (arr(v.misses).length) {
      s.appendChild(h("details", null, h("summary", null, v.misses.length + " misclassified samples"),
        objectTable(v.misses.slice(0, 200))));
    } else if (v.misses !== undefined && v.misses !== null && !Array.isArray(v.misses)) {
      s.appendChild(kv([["misses", v.misses]]));
    }
    return s;
  }

  function softwareSection(rec) {
    var s = section("Software", "software");
    var lock = obj(rec.lock);
    if (Array.isArray(lock.software)) {
      var missing = arr(lock.missing);
      s.appendChild(kv([["lock status", badge(lock.status)], ["root", lock.root], ["created", lock.created],
        ["interpreter", lock.interpreter], ["platform", obj(lock.platform).fingerprint],
        missing.length ? ["missing", joined(missing)] : lock.missing && !Array.isArray(lock.missing) ? ["missing", lock.missing] : null]));
      s.appendChild(objectTable(lock.software, [["name", "Software"], ["version", "Version"], ["origin", "Origin"],
        ["source", "Source"], ["requested_by", "Requested by", function (x) { return joined(x); }],
        ["location", "Location"]], "software lock-software"));
    } else {
      var backend = obj(rec.backend), info = obj(backend.info), runtime = obj(rec.runtime);
      s.appendChild(h("p", { class: "note" }, "No lock: this run was not made with --lock, so only what the run itself reported is known."));
      var seen = [["python", runtime.python || obj(rec.platform).python, runtime.executable],
                  [info.framework || backend.name, info.version, info.runtime],
                  ["reefkit (cr)", rec.cr_version, ""]].filter(function (x) { return x[0] && x[1]; });
      s.appendChild(objectTable(seen.map(function (x) { return { name: x[0], version: x[1], note: x[2] }; }),
        [["name", "Software"], ["version", "Version"], ["note", "Detail"]], "software run-software"));
    }
    return s;
  }

  function platformSection(p) {
    var s = section("Platform", "platform");
    var cpu = obj(p.cpu);
    var pairs = [["fingerprint", h("span", { class: "mono" }, txt(p.fingerprint || DASH))], ["board", p.board],
      ["os", p.distribution_name || p.os], ["kernel", p.kernel], ["arch", p.arch], ["cpu", cpu.model],
      ["cores / threads", txt(cpu.cores || DASH) + " / " + txt(cpu.threads || DASH)], ["max MHz", cpu.max_mhz],
      ["memory", isNum(p.memory_bytes) ? fmtBytes(p.memory_bytes) : p.memory_bytes], ["python", p.python],
      ["libc", txt(p.libc) + " " + txt(p.libc_version)]]
      .filter(function (x) { return x[1] !== undefined && x[1] !== null && x[1] !== "" && x[1] !== " "; });
    arr(p.accelerators).forEach(function (a, i) {
      a = obj(a);
      pairs.push(["accelerator " + (i + 1), [a.vendor, a.name, isNum(a.memory_bytes) ? fmtBytes(a.memory_bytes) : "", a.driver ? "driver " + txt(a.driver) : "",
        a.cuda ? "CUDA " + txt(a.cuda) : ""].map(txt).filter(Boolean).join(", ")]);
    });
    s.appendChild(kv(pairs, "platform"));
    if (arr(cpu.flags).length || arr(p.capabilities).length) {
      s.appendChild(h("details", null, h("summary", null, "capabilities and CPU flags"),
        h("p", null, joined(arr(p.capabilities), " ")), h("p", { class: "sub" }, joined(arr(cpu.flags), " "))));
    }
    return s;
  }

  // ---------------------------------------------------------------- compare
  // [label, value getter, formatter, better: -1 lower is better, 1 higher is better, 0 neither, noise rule]
  var COMPARE_ROWS = [
    ["action", function (r) { return r.action; }, txt, 0],
    ["status", function (r) { return r.status; }, txt, 0],
    ["model / solution", function (r) { var c = subjectOf(r); return txt(c.name || c.ref) + " " + txt(c.version); }, txt, 0],
    ["backend", function (r) { var b = obj(r.backend); return txt(b.name) + " " + txt(obj(b.info).version); }, txt, 0],
    ["variant", function (r) { return obj(r.pipeline).variant || obj(r.config).variant; }, txt, 0],
    ["precision", function (r) { return obj(r.pipeline).precision; }, txt, 0],
    ["platform", function (r) { var row = rowsFor(r)[0]; return row ? row.platform_label : obj(r.platform).fingerprint; }, txt, 0],
    ["scenario", function (r) { return obj(r.metrics).scenario; }, txt, 0],
    ["batch size", function (r) { return obj(r.metrics).batch_size; }, fmtCount, 0],
    ["top-1", accuracyOf("top1"), fmtPct, 1, "accuracy"],
    ["top-5", accuracyOf("top5"), fmtPct, 1, "accuracy"],
    ["p50 latency", lat("p50"), fmtDur, -1, "q", 0.5],
    ["p90 latency", lat("p90"), fmtDur, -1, "q", 0.9],
    ["p99 latency", lat("p99"), fmtDur, -1, "q", 0.99],
    ["p99.9 latency", lat("p99.9"), fmtDur, -1, "tail"],
    ["mean latency", lat("mean"), fmtDur, -1, "mean"],
    ["noise (IQR / p50)", function (r) { return noiseOf(r); }, function (x) { return isNum(x) ? x.toFixed(3) : txt(x); }, 0],
    ["throughput", function (r) { return obj(obj(r.metrics).throughput).samples_per_s; }, fmtRate, 1, "throughput"],
    ["peak memory", function (r) { return obj(r.metrics).peak_rss_bytes; }, fmtBytes, -1, "plain"],
    ["energy / sample", function (r) { var m = obj(r.metrics); return isNum(obj(m.energy).joules_per_sample) ? m.energy.joules_per_sample : m.energy_j_per_sample; }, fmtEnergy, -1, "plain"],
    ["validity", function (r) { return obj(r.metrics).validity; }, txt, 0],
    ["queries", function (r) { return obj(r.metrics).queries; }, fmtCount, 0],
    ["started", function (r) { return r.started; }, fmtDate, 0],
    ["cr version", function (r) { return r.cr_version; }, txt, 0]
  ];
  function lat(k) { return function (r) { return obj(obj(r.metrics).latency_ns)[k]; }; }
  function fmtCount(x) { return isNum(x) ? fmtInt(x) : fmtAny(x); }
  function accuracyOf(k) {
    return function (r) {
      if (r.validation && typeof r.validation === "object") return obj(r.validation)[k];
      var row = rowsFor(r).filter(function (x) { return isNum(x[k]); })[0];
      return row ? row[k] : undefined;
    };
  }

  // Noise. A difference is coloured (green better, red worse) only when it is beyond noise:
  //  - latency percentiles and the mean, as `cr results compare` judges them
  //    (cr/results/compare.py): each run's standard error from its raw samples (the
  //    distribution-free interval of the quantile; stdev / sqrt(n) for the mean), and the
  //    difference is noise when within 1.96 x the combined standard error or under 1 % of
  //    the baseline. The site keeps at most 2,048 samples of a run (every n-th), which only
  //    widens the interval. Without samples: the p50's error from IQR and count, the mean's
  //    from stdev and count; other percentiles then count as noise when within the larger
  //    of both runs' IQR / p50;
  //  - single-stream throughput: the relative noise of the mean latency; other throughputs,
  //    memory and energy: a difference under PLAIN_NOISE (5 %) is noise;
  //  - accuracy (the same samples give the same figure): under 0.05 points is noise;
  //  - p99.9: not judged (as `cr results compare`: too few samples that far in the tail).
  var Z = 1.959964, MIN_EFFECT = 0.01, PLAIN_NOISE = 0.05, ACCURACY_NOISE = 0.0005;
  function noiseOf(r) {
    var m = obj(r.metrics), l = obj(m.latency_ns);
    if (isNum(m.noise)) return m.noise;
    return isNum(l.iqr) && isNum(l.p50) && l.p50 > 0 ? l.iqr / l.p50 : undefined;
  }
  var sortedSamples = new WeakMap();  // record -> its raw samples, sorted (null: fewer than 2)
  function samplesOf(r) {
    if (!sortedSamples.has(r)) {
      var values = arr(obj(r.raw).samples_ns).filter(function (x) { return isNum(x) && x >= 0; });
      sortedSamples.set(r, values.length >= 2 ? values.slice().sort(function (a, b) { return a - b; }) : null);
    }
    return sortedSamples.get(r);
  }
  function quantile(s, q) {
    var pos = q * (s.length - 1), lo = Math.floor(pos), hi = Math.min(lo + 1, s.length - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
  }
  function quantileSe(s, q) {
    var n = s.length, spread = Z * Math.sqrt(n * q * (1 - q));
    var lo = Math.max(0, Math.min(n - 1, Math.floor(n * q - spread))), hi = Math.max(0, Math.min(n - 1, Math.ceil(n * q + spread)));
    return (s[hi] - s[lo]) / (2 * Z);
  }
  function meanSe(r) {
    var s = samplesOf(r);
    if (s) {
      var n = s.length, mean = 0, v = 0;
      s.forEach(function (x) { mean += x; });
      mean /= n;
      s.forEach(function (x) { v += (x - mean) * (x - mean); });
      return { mean: mean, se: Math.sqrt(v / (n - 1) / n) };
    }
    var l = obj(obj(r.metrics).latency_ns), count = l.count;
    return isNum(l.mean) && isNum(l.stdev) && isNum(count) && count > 0 ? { mean: l.mean, se: l.stdev / Math.sqrt(count) } : null;
  }
  // The standard error of one figure of r (null when unknown), for the noise rule spec[4].
  function standardError(r, spec, value) {
    var rule = spec[4], s = samplesOf(r), l = obj(obj(r.metrics).latency_ns);
    if (rule === "q") {
      if (s) return quantileSe(s, spec[5]);
      if (spec[5] === 0.5 && isNum(l.iqr) && isNum(l.count) && l.count > 0) return 1.2533 * (l.iqr / 1.349) / Math.sqrt(l.count);
      return null;
    }
    if (rule === "mean") { var ms = meanSe(r); return ms ? ms.se : null; }
    if (rule === "throughput" && obj(r.metrics).scenario === "single-stream") {
      var m = meanSe(r);
      return m && m.mean > 0 ? value * m.se / m.mean : null;
    }
    return null;
  }
  // -> {verdict: "better" | "worse" | "noise" | "same" | "unknown", why}
  function judge(spec, base, x, baseRec, rec) {
    var diff = x - base, rel = diff / Math.abs(base), rule = spec[4], margin = null, why;
    if (Math.abs(rel) < 1e-9) return { verdict: "same", why: "no difference" };
    if (rule === "tail") return { verdict: "unjudged", why: "not judged: a run has too few samples beyond its p99.9 to tell noise from a difference" };
    if (rule === "accuracy") {
      margin = ACCURACY_NOISE;
      why = "noise: accuracy differences under 0.05 points";
      if (Math.abs(diff) <= margin) return { verdict: "noise", why: why };
    } else if (rule === "plain" || (rule === "throughput" && (standardError(baseRec, spec, base) === null || standardError(rec, spec, x) === null))) {
      if (Math.abs(rel) <= PLAIN_NOISE) return { verdict: "noise", why: "within noise: differences under " + PLAIN_NOISE * 100 + " % are not judged" };
      why = "beyond the " + PLAIN_NOISE * 100 + " % noise threshold";
    } else {
      var seA = standardError(baseRec, spec, base), seB = standardError(rec, spec, x);
      if (seA !== null && seB !== null && isNum(seA) && isNum(seB)) {
        margin = Math.max(Z * Math.sqrt(seA * seA + seB * seB), MIN_EFFECT * Math.abs(base));
        if (Math.abs(diff) <= margin) return { verdict: "noise", why: "within noise (\u00B1" + (margin / Math.abs(base) * 100).toFixed(1) + " %, 95 % interval from the samples)" };
        why = "beyond noise (\u00B1" + (margin / Math.abs(base) * 100).toFixed(1) + " %, 95 % interval from the samples)";
      } else {
        var na = noiseOf(baseRec), nb = noiseOf(rec);
        if (!isNum(na) && !isNum(nb)) return { verdict: "unknown", why: "noise unknown: neither run has raw samples or an IQR" };
        var level = Math.max(isNum(na) ? na : 0, isNum(nb) ? nb : 0, MIN_EFFECT);
        if (Math.abs(rel) <= level) return { verdict: "noise", why: "within noise (the runs' IQR / p50: " + (level * 100).toFixed(1) + " %)" };
        why = "beyond noise (the runs' IQR / p50: " + (level * 100).toFixed(1) + " %)";
      }
    }
    return { verdict: rel * spec[3] > 0 ? "better" : "worse", why: why };
  }

  function renderCompare(main, uids) {
    var token = S.token;
    main.appendChild(h("h1", null, "Compare results"));
    if (uids.length < 2) {
      main.appendChild(h("p", { class: "note" }, "Give two or more result ids: #/compare/UID1,UID2 (or select rows in the leaderboard)."));
      return;
    }
    var status = h("p", { class: "note" }, "Loading " + uids.length + " results\u2026");
    main.appendChild(status);
    track(Promise.all(uids.map(function (u) { return loadResult(u).then(function (r) { return r; }, function () { return null; }); }))
      .then(function (recs) {
        if (token !== S.token) return;
        var missing = uids.filter(function (u, i) { return !recs[i]; });
        status.textContent = missing.length ? "Not on this site: " + missing.join(", ") : "Relative differences are against the first column; " +
          "green (better) or red (worse) only beyond noise (hover a difference for how it was judged).";
        recs = recs.filter(Boolean);
        if (!recs.length) return;
        var head = h("tr", null, h("th", { scope: "col" }, "metric"), recs.map(function (r, i) {
          return h("th", { scope: "col", class: "result-col", "data-uid": r.uid },
            h("a", { href: resultHref(r.uid) }, titleOf(r)), h("div", { class: "sub mono" }, r.uid + (i === 0 ? " (baseline)" : "")));
        }));
        var body = h("tbody");
        COMPARE_ROWS.forEach(function (spec) {
          var values = recs.map(spec[1]);
          if (values.every(function (x) { return x === undefined || x === null || x === ""; })) return;
          var base = values[0];
          body.appendChild(h("tr", { "data-metric": spec[0] }, h("th", { scope: "row" }, spec[0]), values.map(function (x, i) {
            var shown = x === undefined || x === null || x === "" ? DASH : spec[2](x);
            var cell = h("td", { class: (isNum(x) ? "num " : "") + "result-col" }, shown);
            if (i > 0 && spec[3] && isNum(x) && isNum(base) && base !== 0 && isNum((x - base) / Math.abs(base))) {
              var rel = (x - base) / Math.abs(base), j = judge(spec, base, x, recs[0], recs[i]);
              var coloured = j.verdict === "better" || j.verdict === "worse";
              cell.appendChild(h("div", { class: "diff " + (coloured ? j.verdict : "noise"), "data-judgement": j.verdict, title: j.why },
                (rel >= 0 ? "+" : "") + (rel * 100).toFixed(1) + " %" + (j.verdict === "noise" ? " (noise)" : "")));
            }
            return cell;
          })));
        });
        main.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "compare", id: "compare" }, h("thead", null, head), body)));
        if (recs.filter(function (r) { return r.action === "profile"; }).length >= 2) main.appendChild(profileCompareSection(recs));

        var keys = [];
        recs.forEach(function (r) { Object.keys(obj(r.config)).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
        var differing = keys.filter(function (k) {
          var vals = recs.map(function (r) { return JSON.stringify(obj(r.config)[k]); });
          return vals.some(function (x) { return x !== vals[0]; });
        });
        main.appendChild(h("h2", null, "Configuration differences"));
        if (!differing.length) main.appendChild(h("p", { class: "note" }, "The configurations are the same."));
        else {
          main.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "compare-config" },
            h("thead", null, h("tr", null, h("th", null, "parameter"), recs.map(function (r) { return h("th", { class: "mono" }, r.uid); }))),
            h("tbody", null, differing.map(function (k) {
              return h("tr", null, h("th", { scope: "row" }, k), recs.map(function (r) { return h("td", null, fmtAny(obj(r.config)[k])); }));
            })))));
        }
        trustVerdicts(main, recs);
      }));
  }

  // ---------------------------------------------------------------- phases, fidelity, verdicts
  // The result page's phases (load, first inference, warm-up until stable, steady state) and
  // the harness self-check (--fidelity); the compare page's bootstrap verdicts and likely
  // causes, by the rules of cr/results/significance.py and cr/results/causes.py (same
  // constants, same order of causes). Its seeded generator is its own and the site keeps
  // at most a few thousand samples per run, so an interval may differ from the CLI's in
  // its last digits; docs/results.md says how to read them.
  var TRUST = { confidence: 0.95, minEffect: 0.03, resamples: 400, maxSamples: 4000, minSamples: 20,
                busy: 0.10, loadGap: 0.05, freqGap: 0.05, tempGap: 10 };

  function fmtSeconds(s) {
    if (!isNum(s)) return DASH;
    return s < 1e-3 ? (s * 1e6).toFixed(1) + " \u00B5s" : s < 1 ? (s * 1e3).toFixed(2) + " ms" : s.toFixed(3) + " s";
  }
  function warmupText(w) {
    if (!isNum(w.queries) || w.queries === 0 || w.stopped_by === "disabled") return "none";
    var head = fmtInt(w.queries) + " queries in " + fmtSeconds(w.seconds);
    if (w.stopped_by === "sizing query") return "none (1 query to size LoadGen's plan)";
    if (w.until_stable !== true) return head + " (fixed count)";
    var rule = "window " + txt(w.window) + ", within " + (isNum(w.threshold) ? (w.threshold * 100).toFixed(0) : "?") + " %";
    if (w.converged === true) return head + ", stable after " + txt(w.converged_at) + " (" + rule + ")";
    return head + ", NOT stable: stopped by " + txt(w.stopped_by) + " (" + rule + ")";
  }
  function trustPhases(main, m) {
    var p = obj(m.phases), f = obj(m.fidelity), w = obj(p.warmup), steady = obj(p.steady);
    if (!Object.keys(p).length && !Object.keys(f).length) return;
    var s = section("Phases", "phases");
    var pairs = [
      "load_s" in p ? ["load (import + model)", fmtSeconds(p.load_s)] : null,
      "inputs_s" in p ? ["inputs prepared", fmtSeconds(p.inputs_s)] : null,
      "first_inference_s" in p ? ["first inference", fmtSeconds(p.first_inference_s) +
        (p.first_inference_in === "steady" ? " (the first timed query: no warm-up)" : "")] : null,
      Object.keys(w).length ? ["warm-up", warmupText(w)] : null,
      Object.keys(steady).length ? ["steady state", fmtCount(steady.queries) + " queries in " + fmtSeconds(steady.seconds) +
        ", p50 " + fmtDur(steady.p50_ns)] : null,
      Object.keys(f).length ? ["fidelity (cr p50 / bare loop p50)", isNum(f.ratio) ? f.ratio.toFixed(3) + " (bare p50 " +
        fmtDur(f.bare_p50_ns) + " over " + fmtCount(f.queries) + " queries)" : "not measured"] : null
    ];
    s.appendChild(kv(pairs, "phases"));
    var medians = arr(w.window_medians_ns).filter(isNum);
    if (medians.length) {
      s.appendChild(h("p", { class: "note", "data-warmup-medians": String(medians.length) },
        "Warm-up window medians: " + medians.map(fmtDur).join(" \u2192 ")));
    }
    main.appendChild(s);
  }

  function seededRandom(seed) {  // mulberry32: small, fast, the same sequence everywhere
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function timeOrdered(r) {
    var values = arr(obj(r.raw).samples_ns).filter(function (x) { return isNum(x) && x >= 0; });
    if (values.length <= TRUST.maxSamples) return values;
    var step = values.length / TRUST.maxSamples, out = [];
    for (var i = 0; i < TRUST.maxSamples; i++) out.push(values[Math.floor(i * step)]);
    return out;
  }
  function blockResamples(values, rnd) {  // [p50, p99, mean] of each moving-block resample
    var n = values.length, block = Math.max(1, Math.ceil(Math.sqrt(n))), blocks = Math.ceil(n / block), out = [];
    var sample = new Float64Array(blocks * block);
    for (var k = 0; k < TRUST.resamples; k++) {
      var at = 0;
      for (var b = 0; b < blocks; b++) {
        var s = Math.floor(rnd() * (n - block + 1));
        for (var j = 0; j < block; j++) sample[at++] = values[s + j];
      }
      var used = sample.subarray(0, n).slice().sort(), sum = 0;
      for (var q = 0; q < n; q++) sum += used[q];
      out.push([quantile(used, 0.5), quantile(used, 0.99), sum / n]);
    }
    return out;
  }
  function trustVerdict(lo, hi, better) {
    if (better === "lower") { var l = 1 / hi; hi = 1 / lo; lo = l; }
    if (lo > 1 + TRUST.minEffect) return "faster";
    if (hi < 1 / (1 + TRUST.minEffect)) return "slower";
    return "inconclusive";
  }
  function missingReason(r, values) {
    if (r.status !== undefined && r.status !== null && r.status !== "ok") return "result " + txt(r.uid) + " has status " + txt(r.status);
    if (r.raw === null || r.raw === undefined) return "result " + txt(r.uid) + " carries no raw latencies, so the bootstrap has nothing to resample";
    if (values.length < TRUST.minSamples) return "result " + txt(r.uid) + " has " + values.length + " latencies on this site; an interval needs at least " + TRUST.minSamples;
    return null;
  }
  function trustPair(a, b) {
    var va = timeOrdered(a), vb = timeOrdered(b), out = { missing: missingReason(a, va) || missingReason(b, vb), metrics: [] };
    if (out.missing) return out;
    var rnd = seededRandom(0), ra = blockResamples(va, rnd), rb = blockResamples(vb, rnd);
    var sa = va.slice().sort(function (x, y) { return x - y; }), sb = vb.slice().sort(function (x, y) { return x - y; });
    var meanA = 0, meanB = 0;
    va.forEach(function (x) { meanA += x; }); vb.forEach(function (x) { meanB += x; });
    meanA /= va.length; meanB /= vb.length;
    var lo = (1 - TRUST.confidence) / 2, hi = 1 - lo;
    function interval(ratios) { ratios.sort(function (x, y) { return x - y; }); return [quantile(ratios, lo), quantile(ratios, hi)]; }
    [["p50 latency", 0, 0.5], ["p99 latency", 1, 0.99]].forEach(function (spec) {
      var x = quantile(sa, spec[2]), y = quantile(sb, spec[2]);
      if (!(x > 0 && y > 0)) return;
      var ci = interval(ra.map(function (s, i) { return rb[i][spec[1]] / s[spec[1]]; }).filter(isNum));
      out.metrics.push({ label: spec[0], ratio: y / x, ci: ci, verdict: trustVerdict(ci[0], ci[1], "lower") });
    });
    var ta = obj(obj(a.metrics).throughput).queries_per_s, tb = obj(obj(b.metrics).throughput).queries_per_s;
    if (obj(a.metrics).scenario === "server" || obj(b.metrics).scenario === "server") {
      out.metrics.push({ label: "throughput", why: "the server scenario's throughput is set by its arrival rate" });
    } else if (isNum(ta) && isNum(tb) && ta > 0 && tb > 0) {
      var ci = interval(ra.map(function (s, i) { return (tb * meanB / rb[i][2]) / (ta * meanA / s[2]); }).filter(isNum));
      out.metrics.push({ label: "throughput", ratio: tb / ta, ci: ci, verdict: trustVerdict(ci[0], ci[1], "higher") });
    }
    out.beyond = out.metrics.some(function (m) { return m.verdict === "faster" || m.verdict === "slower"; });
    return out;
  }
  function machineOf(r) { var s = obj(obj(r.machine).summary); return Object.keys(s).length ? s : null; }
  function stackOf(r) {
    var out = {}, info = obj(obj(r.backend).info);
    arr(obj(r.lock).software).forEach(function (s) { s = obj(s); if (s.name) out[txt(s.name)] = txt(s.version); });
    if (info.framework && info.version && !(txt(info.framework) in out)) out[txt(info.framework)] = txt(info.version);
    return out;
  }
  function configOf(r) {
    var c = obj(r.config), p = obj(r.pipeline), m = obj(r.metrics), b = obj(r.backend);
    return { threads: c.threads, batch_size: isNum(m.batch_size) ? m.batch_size : c.batch_size, variant: p.variant || c.variant,
             precision: p.precision, backend: b.name || c.backend, backend_options: c.backend_options || b.options,
             scenario: c.scenario || m.scenario, engine: c.engine, samples_per_query: c.samples_per_query,
             target_qps: c.target_qps, inputs: c.inputs, include_preprocess: c.include_preprocess, dataset: c.dataset };
  }
  var CONFIG_CAUSES = [["threads", "different thread count"], ["batch_size", "different batch size"], ["variant", "different model variant"],
    ["precision", "different precision"], ["backend", "different backend"], ["backend_options", "different backend options"],
    ["scenario", "different scenario"], ["engine", "different engine"], ["samples_per_query", "different samples per query"],
    ["target_qps", "different target rate"], ["inputs", "different inputs"], ["include_preprocess", "pre-processing timed in one run only"],
    ["dataset", "different dataset"]];
  function trustCauses(a, b, pair) {
    var out = [], sides = {};
    pair.metrics.forEach(function (m) { if (m.verdict === "slower") sides.b = 1; if (m.verdict === "faster") sides.a = 1; });
    var slower = Object.keys(sides).length === 1 ? Object.keys(sides)[0] : null;
    function fits(side) { return slower === null || slower === side; }
    var fa = obj(a.platform).fingerprint, fb = obj(b.platform).fingerprint;
    if (fa && fb && fa !== fb) out.push(["different platform", txt(fa) + " (A) vs " + txt(fb) + " (B)"]);
    var ca = configOf(a), cb = configOf(b);
    CONFIG_CAUSES.forEach(function (c) {
      var x = JSON.stringify(ca[c[0]] === undefined ? null : ca[c[0]]), y = JSON.stringify(cb[c[0]] === undefined ? null : cb[c[0]]);
      if (x !== y) out.push([c[1], c[0] + " " + x + " (A) vs " + y + " (B)"]);
    });
    var ka = stackOf(a), kb = stackOf(b), differ = Object.keys(ka).filter(function (n) { return n in kb && ka[n] !== kb[n] && n !== "python"; }).sort();
    if (differ.length) out.push(["different software versions", differ.map(function (n) { return n + " " + ka[n] + " (A) vs " + kb[n] + " (B)"; }).join(", ")]);
    var ma = machineOf(a), mb = machineOf(b);
    if (ma && mb) {
      if ((ma.throttled === true) !== (mb.throttled === true) && fits(ma.throttled === true ? "a" : "b")) {
        out.push(["throttling", "the machine was throttled during " + (ma.throttled === true ? "A" : "B")]);
      }
      var la = ma.cpu_other_share, lb = mb.cpu_other_share;
      if (isNum(la) && isNum(lb) && Math.max(la, lb) > TRUST.busy && Math.abs(la - lb) > TRUST.loadGap && fits(la > lb ? "a" : "b")) {
        out.push(["background CPU load", "other processes used " + (la * 100).toFixed(0) + " % of the machine's CPU during A vs " +
          (lb * 100).toFixed(0) + " % during B"]);
      }
      if (ma.governor && mb.governor && ma.governor !== mb.governor && ma.governor !== "unknown" && mb.governor !== "unknown") {
        out.push(["different CPU governor", txt(ma.governor) + " (A) vs " + txt(mb.governor) + " (B)"]);
      }
      var qa = ma.freq_mhz_max, qb = mb.freq_mhz_max;
      if (isNum(qa) && isNum(qb) && qa > 0 && qb > 0 && Math.abs(qa - qb) > TRUST.freqGap * Math.max(qa, qb) && fits(qa < qb ? "a" : "b")) {
        out.push(["different CPU frequency", "highest core frequency " + qa.toFixed(0) + " MHz (A) vs " + qb.toFixed(0) + " MHz (B)"]);
      }
      if ((ma.swap_activity === true) !== (mb.swap_activity === true) && fits(ma.swap_activity === true ? "a" : "b")) {
        out.push(["swapping", "the machine swapped during " + (ma.swap_activity === true ? "A" : "B")]);
      }
      var ta = ma.temp_c_max, tb = mb.temp_c_max;
      if (isNum(ta) && isNum(tb) && Math.abs(ta - tb) > TRUST.tempGap && !out.some(function (c) { return c[0] === "throttling"; }) && fits(ta > tb ? "a" : "b")) {
        out.push(["temperature", "highest temperature " + ta.toFixed(0) + " C (A) vs " + tb.toFixed(0) + " C (B)"]);
      }
    }
    return { causes: out, unchecked: !(ma && mb) };
  }
  function trustVerdicts(main, recs) {
    var s = section("Significance", "significance");
    s.appendChild(h("p", { class: "note" }, (TRUST.confidence * 100) + " % moving-block bootstrap intervals of B / A from each run's raw samples; " +
      "faster or slower only when the whole interval is beyond \u00B1" + (TRUST.minEffect * 100) + " %, else inconclusive."));
    recs.slice(1).forEach(function (r) {
      var pair = trustPair(recs[0], r), block = h("div", { class: "verdicts", "data-uid": r.uid });
      block.appendChild(h("h3", null, txt(r.uid) + " vs baseline " + txt(recs[0].uid)));
      if (pair.missing) block.appendChild(h("p", { class: "note", "data-missing": "1" }, "No confidence interval: " + pair.missing));
      if (pair.metrics.length) {
        block.appendChild(h("table", { class: "verdict-table" }, h("thead", null, h("tr", null, h("th", null, "metric"), h("th", null, "verdict"),
          h("th", null, "B / A"), h("th", null, "95 % interval"))), h("tbody", null, pair.metrics.map(function (m) {
          return h("tr", { "data-metric": m.label, "data-verdict": m.verdict || "unjudged" }, h("th", { scope: "row" }, m.label),
            h("td", { class: "diff " + (m.verdict === "faster" ? "better" : m.verdict === "slower" ? "worse" : "noise") }, m.verdict || "not judged"),
            h("td", { class: "num" }, isNum(m.ratio) ? m.ratio.toFixed(3) : DASH),
            h("td", { class: "num" }, m.ci ? m.ci[0].toFixed(3) + " \u2013 " + m.ci[1].toFixed(3) : txt(m.why)));
        }))));
      }
      if (pair.beyond) {
        var found = trustCauses(recs[0], r, pair);
        if (found.causes.length) {
          block.appendChild(h("p", null, "Likely causes, most likely first:"));
          block.appendChild(h("ol", { class: "causes" }, found.causes.map(function (c) { return h("li", { "data-cause": c[0] }, h("strong", null, c[0]), ": " + c[1]); })));
        } else {
          block.appendChild(h("p", { class: "note" }, "Likely causes: none found in the two records."));
        }
        if (found.unchecked) block.appendChild(h("p", { class: "note" }, "No machine state recorded in a run: governor, frequency, throttling and background load cannot be checked."));
      }
      s.appendChild(block);
    });
    main.appendChild(s);
  }

  // ---------------------------------------------------------------- profiles (cr profile)
  // A profile record (action "profile"): per-layer bars (the top 20 and one "other"), the
  // coverage, where its trace lies; on the compare page, the layers of two or three
  // profiles matched side by side (by the module path and op class cr stored per layer,
  // then by position within an op class, as cr/run/layermatch.py does before fusion).
  var PROFILE_TOP = 20;

  function profileBars(layers, total) {
    var rows = layers.slice(0, PROFILE_TOP).map(function (l) { return [txt(l.name), txt(l.op), l.per_query_ns, txt(l.provider)]; });
    var rest = layers.slice(PROFILE_TOP);
    if (rest.length) rows.push(["other (" + rest.length + " layers)", "", rest.reduce(function (a, l) { return a + (isNum(l.per_query_ns) ? l.per_query_ns : 0); }, 0), ""]);
    var max = rows.reduce(function (a, r) { return Math.max(a, isNum(r[2]) ? r[2] : 0); }, 0) || 1;
    return h("div", { class: "table-wrap" }, h("table", { class: "profile-bars", id: "profile-bars" },
      h("thead", null, h("tr", null, ["Layer", "Op", "Per query", "Share", ""].map(function (t) { return h("th", { scope: "col" }, t); }))),
      h("tbody", null, rows.map(function (r) {
        var share = isNum(r[2]) && isNum(total) && total > 0 ? r[2] / total : null;
        var bar = h("span", { class: "profile-bar", title: r[3] || null });
        bar.style.width = (100 * (isNum(r[2]) ? r[2] : 0) / max).toFixed(1) + "%";
        return h("tr", { "data-layer": r[0] }, h("td", { class: "mono" }, r[0]), h("td", null, r[1]), h("td", { class: "num" }, fmtDur(r[2])),
          h("td", { class: "num" }, share === null ? DASH : (100 * share).toFixed(1) + " %"), h("td", { class: "bar-cell" }, bar));
      }))));
  }

  function profileSection(rec) {
    var p = obj(rec.profile), s = obj(p.summary), model = obj(s.model_ns), trace = obj(rec.trace);
    var sec = section("Profile", "profile");
    var where = trace.file ? [rec.dashboard_trace ? h("a", { href: rec.dashboard_trace, "data-trace": "1" }, txt(trace.file)) :
      h("span", { class: "mono" }, txt(trace.file)),
      (rec.dashboard_trace ? " (a copy in this site; the original lies" : " (not copied into this site: it lies") +
      " beside the record in the results store; " + txt(trace.events) + " events, sha256 " + short(txt(trace.sha256), 16) +
      "); open it in Perfetto or chrome://tracing"] : DASH;
    sec.appendChild(kv([
      ["profiler", p.source], ["level", p.level === "model" ? "model level only" : "per layer"],
      ["queries", txt(s.queries) + " (batch " + txt(s.batch_size) + ")"],
      ["model time p50", fmtDur(model.p50) + " per query (profiled)"],
      ["coverage", isNum(s.coverage) ? s.coverage.toFixed(3) + " (sum of layer times / model time)" : DASH],
      p.note ? ["note", p.note] : null,
      ["trace", isMarkup(where) ? where : txt(where)]
    ], "profile-summary"));
    var layers = arr(p.layers).filter(function (l) { return l && typeof l === "object"; });
    if (layers.length) sec.appendChild(profileBars(layers, model.p50));
    else if (arr(p.untimed).length) sec.appendChild(objectTable(p.untimed, [["name", "Op (untimed)"], ["op", "Type"]], "profile-untimed"));
    return sec;
  }

  function profileKey(l) { return txt(l.path) + "\u0000" + txt(l["class"] || l.op); }

  function matchProfiles(base, other) {
    var pairs = {}, taken = {}, index = {};
    other.forEach(function (l, j) { if (l.path) (index[profileKey(l)] = index[profileKey(l)] || []).push(j); });
    base.forEach(function (l, i) { var c = l.path ? index[profileKey(l)] : null; if (c && c.length) { pairs[i] = c.shift(); taken[pairs[i]] = 1; } });
    var classes = {};
    base.forEach(function (l) { classes[txt(l["class"] || l.op)] = 1; });
    Object.keys(classes).forEach(function (cls) {
      var a = [], b = [];
      base.forEach(function (l, i) { if (!(i in pairs) && txt(l["class"] || l.op) === cls) a.push(i); });
      other.forEach(function (l, j) { if (!taken[j] && txt(l["class"] || l.op) === cls) b.push(j); });
      if (a.length && a.length === b.length) a.forEach(function (i, k) { pairs[i] = b[k]; taken[b[k]] = 1; });
    });
    return pairs;
  }

  function profileCompareSection(recs) {
    var profs = recs.filter(function (r) {
      return r.action === "profile" && arr(obj(r.profile).layers).some(function (l) { return l && typeof l === "object"; });
    }).slice(0, 3);
    var sec = section("Layers side by side", "profile-compare");
    if (profs.length < 2) { sec.appendChild(h("p", { class: "note" }, "Two profiles with per-layer times are needed.")); return sec; }
    var ordered = profs.map(function (r) {
      return arr(obj(r.profile).layers).filter(function (l) { return l && typeof l === "object" && !Array.isArray(l); })
        .sort(function (a, b) { return (isNum(a.order) ? a.order : 0) - (isNum(b.order) ? b.order : 0); });
    });
    var base = ordered[0], maps = ordered.slice(1).map(function (o) { return matchProfiles(base, o); });
    var rows = [];
    base.forEach(function (l, i) {
      if (!maps.every(function (m) { return i in m; })) return;
      var cells = [l].concat(maps.map(function (m, k) { return ordered[k + 1][m[i]]; }));
      var ns = function (c) { return isNum(c.per_query_ns) ? c.per_query_ns : 0; };
      var diff = cells.slice(1).reduce(function (a, c) { var d = ns(c) - ns(l); return Math.abs(d) > Math.abs(a) ? d : a; }, 0);
      // a fused node is named after the last layer it absorbed: its partner's path names the layer better
      var label = l.fused && cells[1].path && cells[1].path !== l.path ? cells[1].path : l.path || l.name;
      rows.push({ layer: txt(label), cls: txt(l["class"] || l.op), cells: cells, diff: diff });
    });
    rows.sort(function (a, b) { return Math.abs(b.diff) - Math.abs(a.diff); });
    sec.appendChild(h("p", { class: "note" }, rows.length + " layers matched of " + base.length + " (" + txt(obj(profs[0].backend).name) +
      "); largest time difference first; ratio against the first profile. Fused nodes are shown by cr profile --compare."));
    sec.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "profile-compare", id: "profile-compare-table" },
      h("thead", null, h("tr", null, h("th", { scope: "col" }, "Layer"), h("th", { scope: "col" }, "Op class"), profs.map(function (r, k) {
        return h("th", { scope: "col" }, txt(obj(r.backend).name) + (k ? " (ratio)" : ""));
      }))),
      h("tbody", null, rows.map(function (r) {
        return h("tr", { "data-layer": r.layer }, h("td", { class: "mono" }, r.layer), h("td", null, r.cls), r.cells.map(function (c, k) {
          var ratio = k && isNum(c.per_query_ns) && isNum(r.cells[0].per_query_ns) && r.cells[0].per_query_ns > 0 ?
            " (" + (c.per_query_ns / r.cells[0].per_query_ns).toFixed(2) + "x)" : "";
          return h("td", { class: "num", title: txt(c.name) + " " + txt(c.op) }, fmtDur(c.per_query_ns) + ratio);
        }));
      })))));
    return sec;
  }

  // ---------------------------------------------------------------- routing
  function parseHash() {
    var hash = location.hash.replace(/^#\/?/, "");
    var slash = hash.indexOf("/");
    var view = slash < 0 ? hash : hash.slice(0, slash), arg = slash < 0 ? "" : hash.slice(slash + 1);
    try { arg = decodeURIComponent(arg); } catch (e) { arg = ""; }
    return { view: view || "leaderboard", arg: arg };
  }

  function render() {
    S.token++;
    destroyCharts();
    var r = parseHash(), main = document.getElementById("main");
    clear(main);
    main.removeAttribute("data-result");
    document.body.setAttribute("data-view", r.view);
    document.title = "reefkit results";
    document.querySelectorAll("[data-nav]").forEach(function (a) {
      a.classList.toggle("active", a.getAttribute("data-nav") === r.view);
    });
    if (!S.index) {
      main.appendChild(h("h1", null, "No data"));
      main.appendChild(h("p", { class: "error-box" }, "data/index.js is missing: this folder holds the dashboard's sources, not a built site. " +
        "Run `cr dashboard build` and open the index.html it writes (cr dashboard open)."));
    } else if (r.view === "leaderboard") renderLeaderboard(main);
    else if (r.view === "pareto") renderPareto(main);
    else if (r.view === "result") {
      if (UID_RE.test(r.arg)) renderResult(main, r.arg);
      else main.appendChild(h("p", { class: "error-box" }, "Not a result id."));
    } else if (r.view === "campaign") renderCampaign(main, r.arg);
    else if (r.view === "compare") {
      renderCompare(main, r.arg.split(",").map(function (u) { return u.trim(); }).filter(function (u) { return UID_RE.test(u); }));
    } else {
      main.appendChild(h("h1", null, "Page not found"));
      main.appendChild(h("p", null, h("a", { href: "#/leaderboard" }, "Go to the leaderboard")));
    }
    hook.view = r.view;
    hook.renders++;
  }

  // ---------------------------------------------------------------- campaigns
  // #/campaign: every campaign on the site; #/campaign/<name>: its solutions x platforms
  // matrix, each cell the runs of that pair (status, p50, top-1, settings) linking to them.
  function campaignHref(name) { return "#/campaign/" + encodeURIComponent(name); }

  function addCampaignNav() {
    var nav = document.querySelector(".top nav");
    if (nav && !nav.querySelector("[data-nav=campaign]")) nav.appendChild(h("a", { href: "#/campaign", "data-nav": "campaign" }, "Campaigns"));
  }

  function campaignRuns(all) {
    var rowOf = new Map();
    S.rows.forEach(function (r) { if (!rowOf.has(r.key)) rowOf.set(r.key, r); });
    var out = [];
    all.byKey.forEach(function (runs, key) {
      var row = rowOf.get(key) || {};
      runs.forEach(function (run) { if (run.campaign) out.push({ run: run, row: row }); });
    });
    return out;
  }

  function campaignCell(items) {
    if (!items.length) return h("span", { class: "sub" }, DASH);
    var ok = items.filter(function (x) { return x.run.status === "ok"; }).length, failed = items.length - ok;
    var p50s = items.filter(function (x) { return x.run.action === "benchmark" && isNum(x.run.p50_ns); }).map(function (x) { return x.run.p50_ns; });
    var top1 = items.filter(function (x) { return isNum(x.run.top1); }).map(function (x) { return x.run.top1; })[0];
    return [
      h("div", null, badge(failed ? "failed" : "ok"), " ", h("span", { class: "sub" }, ok + " ok" + (failed ? ", " + failed + " failed" : ""))),
      p50s.length ? h("div", null, "p50 " + fmtDur(Math.min.apply(null, p50s))) : null,
      isNum(top1) ? h("div", null, "top-1 " + fmtPct(top1)) : null,
      h("div", { class: "sub" }, items.slice(0, 12).map(function (x) {
        return h("div", null, h("a", { href: resultHref(x.run.uid), title: x.run.error || x.run.uid },
          x.run.action + (x.run.config ? " " + x.run.config : "")), x.run.worker ? " on " + x.run.worker : "");
      }), items.length > 12 ? h("div", null, "+" + (items.length - 12) + " more") : null)
    ];
  }

  function renderCampaign(main, name) {
    main.appendChild(h("h1", null, name ? "Campaign " + name : "Campaigns"));
    var body = h("div", { id: "campaign" }, h("p", { class: "note" }, "Loading\u2026"));
    main.appendChild(body);
    var token = S.token;
    track(loadRuns().then(function (all) {
      if (token !== S.token) return;
      clear(body);
      var items = campaignRuns(all);
      if (!name) {
        var counts = new Map();
        items.forEach(function (x) { counts.set(x.run.campaign, (counts.get(x.run.campaign) || 0) + 1); });
        if (!counts.size) { body.appendChild(h("p", { class: "note" }, "No result on this site comes from a campaign (cr campaign run).")); return; }
        body.appendChild(h("ul", null, Array.from(counts.keys()).sort().map(function (c) {
          return h("li", null, h("a", { href: campaignHref(c) }, c), " ", h("span", { class: "sub" }, counts.get(c) + " results"));
        })));
        return;
      }
      items = items.filter(function (x) { return x.run.campaign === name; });
      if (!items.length) { body.appendChild(h("p", { class: "error-box" }, "No result of campaign " + name + " on this site.")); return; }
      var subjects = distinct(items, function (x) { return x.row.subject || "?"; }).sort();
      var platforms = distinct(items, function (x) { return x.row.platform || "?"; });
      var label = new Map();
      items.forEach(function (x) { label.set(x.row.platform || "?", x.row.platform_label || x.row.platform || "?"); });
      platforms.sort(function (a, b) { return label.get(a) < label.get(b) ? -1 : 1; });
      var failed = items.filter(function (x) { return x.run.status !== "ok"; }).length;
      body.appendChild(h("p", { class: "note" }, items.length + " results, " + failed + " failed, on " + platforms.length + " platforms"));
      var table = h("table", { class: "board", "data-campaign": name },
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "Solution"), platforms.map(function (p) { return h("th", { scope: "col" }, label.get(p)); }))),
        h("tbody", null, subjects.map(function (sub) {
          return h("tr", null, h("th", { scope: "row" }, sub), platforms.map(function (p) {
            return h("td", { "data-platform": p }, campaignCell(items.filter(function (x) { return (x.row.subject || "?") === sub && (x.row.platform || "?") === p; })));
          }));
        })));
      body.appendChild(h("div", { class: "table-wrap" }, table));
    }, function () { clear(body); body.appendChild(h("p", { class: "error-box" }, "data/runs.js did not load.")); }));
  }

  function boot() {
    var data = window.CR_DATA_INDEX;
    hook.timings = { dataLoaded: performance.now() };  // ms since navigation start: data/index.js has run
    if (data) {
      S.index = data;
      S.strings = data.strings;
      S.rows = decode(data, data.strings);
      hook.timings.decoded = performance.now();
      var c = data.counts || {};
      document.getElementById("summary").textContent = fmtInt(c.results) + " results \u00B7 " + fmtInt(c.rows) +
        " leaderboard rows \u00B7 newest " + fmtDate(data.generated);
    }
    if (S.rows && S.rows.some(function (r) { return r.campaign; })) addCampaignNav();
    window.addEventListener("hashchange", render);
    render();
    hook.timings.rendered = performance.now();
    hook.ready = true;
  }

  boot();
})();
