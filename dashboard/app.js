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
 * Routes: #/leaderboard, #/pareto, #/result/<uid>, #/compare/<uid>,<uid>[,...]
 * Test hook: window.CR_DASHBOARD (ready, view, rowsTotal, rowsShown, paretoPoints, errors).
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
    paretoPoints: 0, firstRowsAt: null, errors: []
  };
  window.addEventListener("error", function (e) { hook.errors.push(String(e.message || e)); });
  window.addEventListener("unhandledrejection", function (e) { hook.errors.push(String(e.reason)); });

  var S = {
    index: null, rows: [], strings: [],
    filters: { task: "", name: "", backend: "", platform: "", precision: "", scenario: "", q: "" },
    sort: { col: null, dir: 1 }, page: 0, pageSize: 100, selected: new Set(),
    paretoX: "latency", paretoLog: true, charts: [], token: 0, view: null,
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
  function route(v) { v = String(v); return v.charAt(0) === "#" ? v : "#/"; }
  function resultHref(uid) { return "#/result/" + encodeURIComponent(uid); }
  function compareHref(uids) { return "#/compare/" + uids.map(encodeURIComponent).join(","); }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // ---------------------------------------------------------------- formatting
  var DASH = "\u2014";
  function isNum(v) { return typeof v === "number" && isFinite(v); }
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
      });
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
        return rec;
      });
    });
  }

  var runsPromise = null;
  function loadRuns() {
    if (!runsPromise) {
      runsPromise = loadScript("data/runs.js").then(function () {
        var runs = decodeColumns(window.CR_DATA_RUNS, S.strings);
        var byKey = new Map(), where = new Map();
        runs.forEach(function (r) {
          if (!byKey.has(r.key)) byKey.set(r.key, []);
          byKey.get(r.key).push(r);
          where.set(r.uid, r.loc);
        });
        return { byKey: byKey, locations: where };
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

  // Record -> its configuration key, exactly as the builder computes it (records.summarise).
  function str(v, n) { return v === null || v === undefined ? "" : String(v).slice(0, n || 200); }
  function recordKey(rec) {
    var c = (rec.components || [])[0] || {};
    var b = rec.backend || {}, cfg = rec.config || {}, p = rec.pipeline || {}, pl = rec.platform || {};
    return [str(c.ref) || "unknown", str(b.name || cfg.backend, 60) || "unknown", str(p.variant || cfg.variant, 80),
            str(p.precision, 40), str(pl.fingerprint, 40) || "unknown"].join("\u0000");
  }
  function rowKey(r) { return [r.subject, r.backend, r.variant, r.precision, r.platform].join("\u0000"); }
  function rowsFor(rec) {
    if (!S.rowsByKey) {
      S.rowsByKey = new Map();
      S.rows.forEach(function (r) {
        var k = rowKey(r);
        if (!S.rowsByKey.has(k)) S.rowsByKey.set(k, []);
        S.rowsByKey.get(k).push(r);
      });
    }
    return S.rowsByKey.get(recordKey(rec)) || [];
  }

  // ---------------------------------------------------------------- filters
  var FILTERS = [
    ["task", "Task", function (r) { return r.task; }, null],
    ["name", "Model", function (r) { return r.name; }, null],
    ["backend", "Backend", function (r) { return r.backend; }, null],
    ["platform", "Platform", function (r) { return r.platform; }, function (r) { return r.platform_label; }],
    ["precision", "Precision", function (r) { return r.precision; }, null],
    ["scenario", "Scenario", function (r) { return r.scenario; }, null]
  ];

  function searchText(r) {
    if (r._q === undefined) {
      r._q = [r.name, r.version, r.subject, r.task, r.backend, r.backend_version, r.variant, r.precision,
              r.platform_label, r.platform, r.arch, r.scenario, r.outcome, r.validity, r.error, r.reproduction,
              r.bench_uid, r.validate_uid].concat(r.tags).join("\n").toLowerCase();
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
        var uid = r.bench_uid || r.validate_uid;
        var links = [];
        if (r.bench_uid) links.push(h("a", { href: resultHref(r.bench_uid) }, "benchmark"));
        if (r.validate_uid) links.push(links.length ? " \u00B7 " : "", h("a", { href: resultHref(r.validate_uid) }, "validation"));
        return [h("a", { href: resultHref(uid), class: "subject" }, r.name), " ", h("span", { class: "sub" }, r.version),
                r.kind === "solution" ? h("span", { class: "tag" }, "solution") : null,
                r.tags.length ? h("div", null, r.tags.map(function (t) { return h("span", { class: "tag" }, t); })) : null,
                h("div", { class: "sub" }, links)];
      } },
    { id: "task", label: "Task" },
    { id: "backend", label: "Backend", cell: function (r) { return [r.backend, " ", h("span", { class: "sub" }, r.backend_version)]; } },
    { id: "variant", label: "Variant" },
    { id: "precision", label: "Precision" },
    { id: "platform_label", label: "Platform" },
    { id: "scenario", label: "Scenario" },
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
  var COLUMN_BY_ID = {};
  COLUMNS.forEach(function (c) { COLUMN_BY_ID[c.id] = c; });

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
        .map(function (r) { return r.bench_uid || r.validate_uid; }).filter(Boolean);
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
    main.appendChild(h("p", { class: "note" }, "One row per model or solution, backend, variant, precision, platform and " +
      "scenario: the latest benchmark joined with the latest validation of the same configuration. Click a column to sort."));
    main.appendChild(filterBar(refresh));
    main.appendChild(h("div", { class: "toolbar" }, compareButton, selectionNote));
    main.appendChild(topPager);
    main.appendChild(h("div", { class: "table-wrap" }, table));
    main.appendChild(pager);
    updateSelection();
    refresh();
  }

  // ---------------------------------------------------------------- Pareto plot
  function colourMap(values) {
    var m = new Map();
    values.forEach(function (v, i) { m.set(v, PALETTE[i % PALETTE.length]); });
    return m;
  }
  function distinct(rows, f) {
    var s = new Set();
    rows.forEach(function (r) { s.add(f(r)); });
    return Array.from(s).sort();
  }

  // Frontier of points maximising y and, for latency, minimising x (throughput: maximising x),
  // as a staircase that runs on to the edge of the platform's points: with more latency to
  // spare (less throughput needed) the best accuracy stays what it was.
  function frontier(points, maximiseX) {
    var sorted = points.slice().sort(function (a, b) { return maximiseX ? b.x - a.x : a.x - b.x; });
    var out = [], best = -Infinity;
    sorted.forEach(function (p) { if (p.y > best) { out.push({ x: p.x, y: p.y }); best = p.y; } });
    var edge = sorted[sorted.length - 1];
    if (out.length && edge.x !== out[out.length - 1].x) out.push({ x: edge.x, y: out[out.length - 1].y });
    return out.sort(function (a, b) { return a.x - b.x; });
  }

  function renderPareto(main) {
    var token = S.token;
    var backends = distinct(S.rows, function (r) { return r.backend; });
    var platforms = distinct(S.rows, function (r) { return r.platform; });
    var colours = colourMap(backends);
    var shapes = new Map(), dashes = new Map(), platformLabel = new Map();
    platforms.forEach(function (p, i) { shapes.set(p, SHAPES[i % SHAPES.length]); dashes.set(p, DASHES[i % DASHES.length]); });
    S.rows.forEach(function (r) { platformLabel.set(r.platform, r.platform_label); });

    var axis = h("select", { "data-control": "x-axis", "aria-label": "x axis", on: { change: function () {
      S.paretoX = axis.value; draw(); } } },
      h("option", { value: "latency", text: "p50 latency vs top-1 accuracy" }),
      h("option", { value: "throughput", text: "throughput vs top-1 accuracy" }));
    axis.value = S.paretoX;
    var logBox = h("input", { type: "checkbox", checked: S.paretoLog, on: { change: function () { S.paretoLog = logBox.checked; draw(); } } });
    var legend = h("div", { class: "legend", id: "pareto-legend" });
    var hover = h("div", { class: "hover-row", id: "pareto-hover" }, h("span", { class: "note" }, "Hover a point to see its row; click it to open the result."));
    var note = h("p", { class: "note", id: "pareto-note" });
    var canvas = h("canvas", { id: "pareto-canvas", role: "img", "aria-label": "Pareto plot" });
    var box = h("div", { class: "chart-box", id: "pareto", "data-points": 0 }, canvas);

    main.appendChild(h("h1", null, "Pareto plot"));
    main.appendChild(filterBar(draw));
    main.appendChild(h("div", { class: "toolbar" }, h("label", null, "Plot ", axis), h("label", null, logBox, " logarithmic x axis")));
    main.appendChild(legend);
    main.appendChild(hover);
    main.appendChild(box);
    main.appendChild(note);

    function rowLines(r) {
      return [r.name + " " + r.version + (r.scenario ? " (" + r.scenario + ")" : ""),
              r.backend + " " + r.backend_version + ", " + (r.variant || "") + (r.precision ? " " + r.precision : ""),
              r.platform_label,
              "top-1 " + fmtPct(r.top1) + ", p50 " + fmtDur(r.p50_ns) + ", " + fmtRate(r.throughput)];
    }

    function draw() {
      if (token !== S.token) return;
      loadChart().then(function (Chart) {
        if (token !== S.token) return;
        var latency = S.paretoX === "latency";
        var xOf = latency ? function (r) { return r.p50_ns / 1e6; } : function (r) { return r.throughput; };
        var rows = filteredRows();
        var sets = new Map(), byPlatform = new Map(), count = 0, missing = 0;
        rows.forEach(function (r) {
          var x = latency ? r.p50_ns : r.throughput;
          if (!isNum(x) || !isNum(r.top1) || x <= 0) { missing++; return; }
          var k = r.backend + "\u0000" + r.platform;
          if (!sets.has(k)) sets.set(k, { backend: r.backend, platform: r.platform, data: [] });
          var p = { x: xOf(r), y: r.top1 * 100, row: r.i };
          sets.get(k).data.push(p);
          if (!byPlatform.has(r.platform)) byPlatform.set(r.platform, []);
          byPlatform.get(r.platform).push(p);
          count++;
        });
        var datasets = [];
        Array.from(sets.values()).sort(function (a, b) {
          return a.backend < b.backend ? -1 : a.backend > b.backend ? 1 : a.platform < b.platform ? -1 : a.platform > b.platform ? 1 : 0;
        }).forEach(function (s) {
          var colour = colours.get(s.backend);
          datasets.push({ type: "scatter", label: s.backend + " on " + platformLabel.get(s.platform), data: s.data,
            pointStyle: shapes.get(s.platform)[0], backgroundColor: colour + "b0", borderColor: colour,
            borderWidth: 1.5, pointRadius: count > 5000 ? 2.5 : 5, pointHoverRadius: 8, crKind: "points" });
        });
        Array.from(byPlatform.keys()).sort().forEach(function (p) {
          var f = frontier(byPlatform.get(p), !latency);
          if (f.length < 1) return;
          datasets.push({ type: "line", label: "frontier " + platformLabel.get(p), data: f,
            borderColor: "#6b7280", borderDash: dashes.get(p), borderWidth: 1.5, pointRadius: 0, pointHoverRadius: 0,
            stepped: latency ? "after" : "before", fill: false, crKind: "frontier" });
        });
        destroyCharts();
        var chart = new Chart(canvas, {
          data: { datasets: datasets },
          options: {
            parsing: false, normalized: true,
            interaction: { mode: "nearest", intersect: true },
            scales: {
              x: { type: S.paretoLog ? "logarithmic" : "linear",
                   title: { display: true, text: latency ? "p50 latency (ms, lower is better)" : "throughput (samples/s, higher is better)" } },
              y: yRange(byPlatform, { type: "linear", title: { display: true, text: "top-1 accuracy (%)" } })
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
              location.hash = resultHref(r.bench_uid || r.validate_uid);
            }
          }
        });
        S.charts.push(chart);
        var drawn = 0;
        chart.data.datasets.forEach(function (d, i) { if (d.crKind === "points") drawn += chart.getDatasetMeta(i).data.length; });
        box.setAttribute("data-points", count);
        box.setAttribute("data-drawn", drawn);
        hook.paretoPoints = count;
        note.textContent = fmtInt(count) + (count === 1 ? " point" : " points") + (missing ? "; " + fmtInt(missing) + (missing === 1 ? " row is" : " rows are") + " left out because " + (missing === 1 ? "it lacks " : "they lack ") +
          (latency ? "a p50 latency" : "a throughput") + " or a top-1 accuracy" : "") +
          ". Lines: the Pareto frontier of each platform (no other point of that platform is both " +
          (latency ? "faster" : "higher in throughput") + " and more accurate).";
        drawLegend(legend, backends.filter(function (b) { return rows.some(function (r) { return r.backend === b; }); }),
          platforms.filter(function (p) { return byPlatform.has(p); }), colours, shapes, dashes, platformLabel);
      });
    }
    draw();
  }

  // Room above and below the points (accuracy never above 100 %), so none sits on the frame.
  function yRange(byPlatform, axis) {
    var lo = Infinity, hi = -Infinity;
    byPlatform.forEach(function (points) { points.forEach(function (p) { lo = Math.min(lo, p.y); hi = Math.max(hi, p.y); }); });
    if (!isFinite(lo)) return axis;
    var pad = Math.max(0.5, (hi - lo) * 0.1);
    axis.min = Math.max(0, Math.floor((lo - pad) * 2) / 2);
    axis.max = Math.min(100, Math.ceil((hi + pad) * 2) / 2);
    return axis;
  }

  function drawLegend(legend, backends, platforms, colours, shapes, dashes, platformLabel) {
    clear(legend);
    legend.appendChild(h("div", { class: "group" }, h("span", { class: "title" }, "Backend (colour):"),
      backends.map(function (b) {
        var sw = h("span", { class: "swatch" });
        sw.style.background = colours.get(b);
        return h("span", { class: "item", "data-legend": "backend" }, sw, b);
      })));
    legend.appendChild(h("div", { class: "group" }, h("span", { class: "title" }, "Platform (shape, frontier line):"),
      platforms.map(function (p) {
        var dash = dashes.get(p).length ? " (" + (dashes.get(p).join("-")) + " dashes)" : " (solid)";
        return h("span", { class: "item", "data-legend": "platform" }, h("span", { class: "shape" }, shapes.get(p)[1]),
          platformLabel.get(p), h("span", { class: "sub" }, dash));
      })));
  }

  function destroyCharts() {
    S.charts.forEach(function (c) { try { c.destroy(); } catch (e) { /* already gone */ } });
    S.charts = [];
  }

  // ---------------------------------------------------------------- result detail
  function kv(pairs, cls) {
    return h("table", { class: "kv" + (cls ? " " + cls : "") }, h("tbody", null, pairs.filter(Boolean).map(function (p) {
      return h("tr", null, h("th", { scope: "row" }, p[0]), h("td", null, isMarkup(p[1]) ? p[1] : fmtAny(p[1])));
    })));
  }

  // Nodes built here (or lists holding some) are shown as they are; anything else is data, shown as text.
  function isMarkup(x) {
    return x instanceof Node || (Array.isArray(x) && x.some(function (e) { return e instanceof Node; }));
  }

  function objectTable(list, columns, cls) {
    list = (list || []).filter(function (x) { return x && typeof x === "object"; });
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
          return h("td", null, v instanceof Node ? v : fmtAny(v));
        }));
      }))));
  }

  function badge(text) { return text ? h("span", { class: "badge status-" + String(text).replace(/[^A-Za-z0-9_-]/g, "") }, text) : null; }
  function pre(value) { return h("pre", null, typeof value === "string" ? value : JSON.stringify(value, null, 2)); }
  function steps(list) { return pre(Array.isArray(list) ? list.map(function (x) { return JSON.stringify(x); }).join("\n") : list || DASH); }
  function section(title, id) { return h("section", { id: id || null }, h("h2", null, title)); }

  function subjectOf(rec) { return (rec.components || [])[0] || {}; }
  function titleOf(rec) {
    var c = subjectOf(rec), b = rec.backend || {};
    return (c.name || c.ref || "unknown") + " " + (c.version || "") + " \u2014 " + (rec.action || "result") + " on " + (b.name || "?");
  }

  function renderResult(main, uid) {
    var token = S.token;
    main.appendChild(h("p", { class: "note" }, "Loading result " + uid + "\u2026"));
    loadResult(uid).then(function (rec) {
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
    });
  }

  function resultPage(main, rec, token) {
    var m = rec.metrics || null, v = rec.validation || null, err = rec.error || null;
    var backend = rec.backend || {}, info = backend.info || {};
    document.title = titleOf(rec) + " \u00B7 reefkit results";
    main.setAttribute("data-result", rec.uid);
    main.appendChild(h("p", { class: "sub" }, h("a", { href: "#/leaderboard" }, "\u2039 Leaderboard")));
    main.appendChild(h("h1", null, titleOf(rec), " ", badge(rec.status), " ", m ? badge(m.validity) : null, " ", v ? badge(v.outcome) : null));

    var rows = rowsFor(rec);
    var row = rows.filter(function (r) { return !m || r.scenario === (m.scenario || ""); })[0] || rows[0];
    var companion = row ? (rec.action === "benchmark" ? row.validate_uid : row.bench_uid) : "";
    var overview = [
      ["uid", h("span", { class: "mono" }, rec.uid)],
      ["action", rec.action], ["status", rec.status],
      ["subject", subjectOf(rec).ref],
      ["backend", (backend.name || "") + (info.version ? " " + info.version : "")],
      ["variant / precision", ((rec.pipeline || {}).variant || (rec.config || {}).variant || DASH) + " / " + ((rec.pipeline || {}).precision || DASH)],
      ["platform", row ? row.platform_label : ((rec.platform || {}).fingerprint || DASH)],
      ["started", rec.started], ["ended", rec.ended], ["cr version", rec.cr_version],
      ["source file", rec.dashboard_source],
      rec.tags && rec.tags.length ? ["tags", rec.tags.map(function (t) { return h("span", { class: "tag" }, String(t)); })] : null,
      companion && companion !== rec.uid ? [rec.action === "benchmark" ? "validation" : "benchmark",
        [h("a", { href: resultHref(companion) }, companion), " ",
         h("a", { href: compareHref([rec.uid, companion]) }, "(compare)")]] : null,
      row && rec.action === "benchmark" && isNum(row.top1) ? ["accuracy (latest validation)", fmtPct(row.top1)] : null
    ];
    main.appendChild(kv(overview, "overview"));

    if (err) {
      var es = section("Error", "error");
      es.appendChild(h("div", { class: "error-box" }, h("strong", null, err.type || err.kind || "error"), ": ", String(err.message || "")));
      if (err.hint) es.appendChild(h("p", null, "Hint: ", String(err.hint)));
      if (err.stderr_tail) es.appendChild(pre(String(err.stderr_tail)));
      main.appendChild(es);
    }
    if (rec.reproduction !== undefined && rec.reproduction !== null) main.appendChild(reproductionSection(rec.reproduction));
    if (m) main.appendChild(metricsSection(m));
    if (rec.raw && rec.raw.samples_ns) main.appendChild(latencySection(rec, token));
    if (v) main.appendChild(validationSection(v));
    if (rec.parity) {
      var ps = section("Parity", "parity");
      ps.appendChild(kv([["outcome", badge(rec.parity.outcome)], ["tolerance", rec.parity.tolerance]]));
      ps.appendChild(objectTable(rec.parity.pairs, [["backends", "Backends", function (b) { return (b || []).join(" vs "); }],
        ["samples", "Samples"], ["max_abs_diff", "Max abs diff"], ["top1_agreement", "Top-1 agreement"], ["ok", "OK"]]));
      main.appendChild(ps);
    }
    main.appendChild(softwareSection(rec));

    var cs = section("Configuration", "config");
    cs.appendChild(kv(Object.keys(rec.config || {}).map(function (k) { return [k, rec.config[k]]; })));
    main.appendChild(cs);

    var two = h("div", { class: "cols-2" });
    var bs = section("Backend", "backend");
    bs.appendChild(kv([["name", backend.name], ["entry", backend.entry], ["origin", backend.origin], ["options", backend.options]]
      .concat(Object.keys(info).map(function (k) { return [k, info[k]]; }))));
    two.appendChild(bs);
    two.appendChild(platformSection(rec.platform || {}));
    main.appendChild(two);

    if (rec.pipeline) {
      var pl = rec.pipeline;
      var pls = section("Pipeline", "pipeline");
      pls.appendChild(kv([["variant", pl.variant], ["precision", pl.precision], ["sha256", h("span", { class: "mono" }, String(pl.sha256 || DASH))],
        ["pre-processing", steps(pl.preprocess)], ["post-processing", steps(pl.postprocess)]]));
      if (rec.model_file) pls.appendChild(kv([["model file", rec.model_file.path], ["model sha256", h("span", { class: "mono" }, String(rec.model_file.sha256 || DASH))]]));
      main.appendChild(pls);
    }
    var comp = section("Components", "components");
    comp.appendChild(objectTable(rec.components, [["ref", "Ref"], ["uid", "uid"], ["repo", "Repository"],
      ["sha256", "sha256", function (s) { return h("span", { class: "mono" }, short(s, 20)); }]]));
    main.appendChild(comp);

    var hist = section("Runs of this configuration", "history");
    hist.appendChild(h("p", { class: "note" }, "Loading\u2026"));
    main.appendChild(hist);
    if (row) {
      loadRuns().then(function (all) {
        if (token !== S.token) return;
        clear(hist);
        hist.appendChild(h("h2", null, "Runs of this configuration"));
        var runs = all.byKey.get(row.key) || [];
        hist.appendChild(objectTable(runs.slice(0, 100), [
          ["time", "Time", fmtDate], ["action", "Action"], ["status", "Status", badge], ["scenario", "Scenario"],
          ["p50_ns", "p50", fmtDur], ["throughput", "Throughput", fmtRate], ["top1", "Top-1", fmtPct],
          ["uid", "Result", function (u) { return u === rec.uid ? h("span", { class: "sub" }, "this one") :
            h("span", null, h("a", { href: resultHref(u) }, u), " ", h("a", { href: compareHref([rec.uid, u]) }, "(compare)")); }]
        ], "runs"));
        if (runs.length > 100) hist.appendChild(h("p", { class: "note" }, "The newest 100 of " + runs.length + " runs."));
      }, function () { clear(hist); add(hist, [h("h2", null, "Runs of this configuration"), h("p", { class: "note" }, "data/runs.js did not load.")]); });
    } else {
      clear(hist);
    }

    var raw = section("Record", "record");
    raw.appendChild(h("details", null, h("summary", null, "The whole record as JSON (raw latencies shortened)"), pre(rec)));
    main.appendChild(raw);
  }

  function reproductionSection(repro) {
    var s = section("Reproduction", "reproduction");
    if (typeof repro !== "object") { s.appendChild(kv([["status", String(repro)]])); return s; }
    var outcome = repro.outcome || repro.status;
    if (outcome) s.appendChild(h("p", null, badge(String(outcome))));
    var lists = [];
    s.appendChild(kv(Object.keys(repro).filter(function (k) {
      if (Array.isArray(repro[k]) && repro[k].length && typeof repro[k][0] === "object") { lists.push(k); return false; }
      return true;
    }).map(function (k) { return [k, repro[k]]; })));
    lists.forEach(function (k) { s.appendChild(h("h3", null, k)); s.appendChild(objectTable(repro[k])); });
    return s;
  }

  function metricsSection(m) {
    var s = section("Metrics", "metrics");
    var lat = m.latency_ns || {}, tp = m.throughput || {};
    var pairs = [
      ["scenario", m.scenario + (m.engine === "loadgen" ? " (MLPerf LoadGen)" : "")],
      ["validity", [badge(m.validity), (m.invalid_reasons || []).length ? " " + m.invalid_reasons.join("; ") : ""]],
      ["queries", fmtInt(m.queries)],
      ["samples", fmtInt(m.samples) + (m.samples_per_query ? " (" + m.samples_per_query + " per query, batch " + m.batch_size + ")" : "")],
      ["duration", isNum(m.duration_s) ? m.duration_s.toFixed(3) + " s" : DASH],
      ["throughput", fmtRate(tp.samples_per_s) + " samples, " + fmtRate(tp.queries_per_s) + " queries"],
      ["noise (IQR / p50)", isNum(m.noise) ? m.noise.toFixed(3) + (m.noisy ? " (noisy)" : "") : DASH],
      ["peak memory (RSS)", fmtBytes(m.peak_rss_bytes)]
    ];
    var energy = m.energy && typeof m.energy === "object" ? m.energy.joules_per_sample : m.energy_j_per_sample;
    if (isNum(energy)) pairs.push(["energy", fmtEnergy(energy) + " per sample"]);
    if (m.server) pairs.push(["server", "target " + m.server.target_qps + " q/s, achieved " + fmtRate(m.server.achieved_qps) +
      ", p99 " + m.server.p99_ms + " ms (bound " + m.server.latency_bound_ms + " ms)"]);
    s.appendChild(h("div", { class: "cols-2" }, kv(pairs, "metrics"),
      kv(["min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "stdev", "iqr"].filter(function (k) { return k in lat; })
        .map(function (k) { return ["latency " + k, fmtDur(lat[k])]; }), "latency")));
    return s;
  }

  function latencySection(rec, token) {
    var raw = rec.raw, s = section("Latency distribution", "latency");
    var values = (raw.samples_ns || []).map(Number).filter(function (x) { return isFinite(x); });
    if (raw.problem) s.appendChild(h("p", { class: "error-box" }, raw.problem));
    if (!values.length) { s.appendChild(h("p", { class: "note" }, "No raw samples in this record.")); return s; }
    s.appendChild(h("p", { class: "note" }, raw.step > 1
      ? "From " + fmtInt(values.length) + " of " + fmtInt(raw.count) + " samples (one in every " + raw.step + ", in time order); the percentiles above are exact."
      : "From all " + fmtInt(values.length) + " samples."));
    var boxes = [h("canvas", { id: "latency-histogram", role: "img", "aria-label": "latency histogram" }),
                 h("canvas", { id: "latency-cdf", role: "img", "aria-label": "latency CDF" }),
                 h("canvas", { id: "latency-series", role: "img", "aria-label": "latency over time" })];
    s.appendChild(h("div", { class: "charts" }, boxes.map(function (c) { return h("div", { class: "chart-small" }, c); })));
    loadChart().then(function (Chart) {
      if (token !== S.token) return;
      var sorted = values.slice().sort(function (a, b) { return a - b; });
      var ms = function (ns) { return ns / 1e6; };
      var hist = histogram(sorted, 40);
      S.charts.push(new Chart(boxes[0], {
        type: "bar",
        data: { labels: hist.labels, datasets: [{ label: "samples", data: hist.counts, backgroundColor: "#1f77b4", barPercentage: 1, categoryPercentage: 1 }] },
        options: { plugins: { legend: { display: false }, title: { display: true, text: "Histogram" + (hist.log ? " (log-spaced bins)" : "") } },
                   scales: { x: { title: { display: true, text: "latency (ms, bin start)" } }, y: { title: { display: true, text: "samples" } } } }
      }));
      var n = sorted.length, cdf = sorted.map(function (x, i) { return { x: ms(x), y: (i + 1) / n }; });
      var lat = (rec.metrics || {}).latency_ns || {};
      var marks = [["p50", 0.5], ["p90", 0.9], ["p99", 0.99], ["p99.9", 0.999]].filter(function (p) { return isNum(lat[p[0]]); })
        .map(function (p) { return { x: ms(lat[p[0]]), y: p[1], name: p[0] }; });
      S.charts.push(new Chart(boxes[1], {
        type: "line",
        data: { datasets: [{ label: "CDF", data: cdf, borderColor: "#1f77b4", pointRadius: 0, borderWidth: 1.5, stepped: true },
                           { type: "scatter", label: "exact percentiles", data: marks, borderColor: "#d62728", backgroundColor: "#d62728", pointRadius: 4 }] },
        options: { parsing: false, plugins: { title: { display: true, text: "Cumulative distribution" },
                     tooltip: { callbacks: { label: function (item) { return (item.raw.name ? item.raw.name + ": " : "") + item.raw.x.toPrecision(4) + " ms, " + (item.raw.y * 100).toFixed(2) + " %"; } } } },
                   scales: { x: { type: sorted[0] > 0 && sorted[n - 1] / sorted[0] > 20 ? "logarithmic" : "linear", title: { display: true, text: "latency (ms)" } },
                             y: { min: 0, max: 1, title: { display: true, text: "fraction of samples" } } } }
      }));
      var step = raw.step || 1;
      S.charts.push(new Chart(boxes[2], {
        type: "line",
        data: { datasets: [{ label: "latency", data: values.map(function (x, i) { return { x: i * step, y: ms(x) }; }),
                             borderColor: "#2ca02c", pointRadius: 0, borderWidth: 1 }] },
        options: { parsing: false, plugins: { legend: { display: false }, title: { display: true, text: "Latency over the run" } },
                   scales: { x: { type: "linear", title: { display: true, text: "query" } }, y: { title: { display: true, text: "latency (ms)" } } } }
      }));
      s.setAttribute("data-samples", values.length);
    });
    return s;
  }

  function histogram(sorted, bins) {
    var lo = sorted[0], hi = sorted[sorted.length - 1];
    var log = lo > 0 && hi / lo > 20;
    var a = log ? Math.log(lo) : lo, b = log ? Math.log(hi) : hi;
    if (b <= a) b = a + 1;
    var width = (b - a) / bins, counts = new Array(bins).fill(0), labels = [];
    sorted.forEach(function (x) {
      var k = Math.floor(((log ? Math.log(x) : x) - a) / width);
      counts[Math.min(bins - 1, Math.max(0, k))]++;
    });
    for (var i = 0; i < bins; i++) {
      var edge = a + i * width;
      labels.push(((log ? Math.exp(edge) : edge) / 1e6).toPrecision(3));
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
    if (v.checks && v.checks.length) {
      s.appendChild(h("h3", null, "Checks"));
      s.appendChild(objectTable(v.checks, [["metric", "Metric"], ["value", "Value"], ["expected", "Expected"],
        ["allowed", "Allowed difference"], ["diff", "Difference"], ["ok", "OK", function (ok) { return badge(ok ? "PASS" : "FAIL"); }]], "checks"));
    }
    if (v.misses && v.misses.length) {
      s.appendChild(h("details", null, h("summary", null, v.misses.length + " misclassified samples"),
        objectTable(v.misses.slice(0, 200))));
    }
    return s;
  }

  function softwareSection(rec) {
    var s = section("Software", "software");
    var lock = rec.lock;
    if (lock && Array.isArray(lock.software)) {
      s.appendChild(kv([["lock status", badge(lock.status)], ["root", lock.root], ["created", lock.created],
        ["interpreter", lock.interpreter], ["platform", (lock.platform || {}).fingerprint],
        (lock.missing || []).length ? ["missing", lock.missing.join(", ")] : null]));
      s.appendChild(objectTable(lock.software, [["name", "Software"], ["version", "Version"], ["origin", "Origin"],
        ["source", "Source"], ["requested_by", "Requested by", function (x) { return (x || []).join(", "); }],
        ["location", "Location"]], "software lock-software"));
    } else {
      var info = (rec.backend || {}).info || {}, runtime = rec.runtime || {};
      s.appendChild(h("p", { class: "note" }, "No lock: this run was not made with --lock, so only what the run itself reported is known."));
      var seen = [["python", runtime.python || (rec.platform || {}).python, runtime.executable],
                  [info.framework || (rec.backend || {}).name, info.version, info.runtime],
                  ["reefkit (cr)", rec.cr_version, ""]].filter(function (x) { return x[0] && x[1]; });
      s.appendChild(objectTable(seen.map(function (x) { return { name: x[0], version: x[1], note: x[2] }; }),
        [["name", "Software"], ["version", "Version"], ["note", "Detail"]], "software run-software"));
    }
    return s;
  }

  function platformSection(p) {
    var s = section("Platform", "platform");
    var cpu = p.cpu || {};
    var pairs = [["fingerprint", h("span", { class: "mono" }, String(p.fingerprint || DASH))], ["board", p.board],
      ["os", p.distribution_name || p.os], ["kernel", p.kernel], ["arch", p.arch], ["cpu", cpu.model],
      ["cores / threads", (cpu.cores || DASH) + " / " + (cpu.threads || DASH)], ["max MHz", cpu.max_mhz],
      ["memory", fmtBytes(p.memory_bytes)], ["python", p.python], ["libc", (p.libc || "") + " " + (p.libc_version || "")]]
      .filter(function (x) { return x[1] !== undefined && x[1] !== null && x[1] !== ""; });
    (p.accelerators || []).forEach(function (a, i) {
      pairs.push(["accelerator " + (i + 1), [a.vendor, a.name, a.memory_bytes ? fmtBytes(a.memory_bytes) : "", a.driver ? "driver " + a.driver : "",
        a.cuda ? "CUDA " + a.cuda : ""].filter(Boolean).join(", ")]);
    });
    s.appendChild(kv(pairs, "platform"));
    if ((cpu.flags || []).length || (p.capabilities || []).length) {
      s.appendChild(h("details", null, h("summary", null, "capabilities and CPU flags"),
        h("p", null, (p.capabilities || []).join(" ")), h("p", { class: "sub" }, (cpu.flags || []).join(" "))));
    }
    return s;
  }

  // ---------------------------------------------------------------- compare
  // [label, value getter, formatter, better: -1 lower is better, 1 higher is better, 0 neither]
  var COMPARE_ROWS = [
    ["action", function (r) { return r.action; }, String, 0],
    ["status", function (r) { return r.status; }, String, 0],
    ["model / solution", function (r) { var c = subjectOf(r); return (c.name || c.ref || "") + " " + (c.version || ""); }, String, 0],
    ["backend", function (r) { var b = r.backend || {}; return (b.name || "") + " " + ((b.info || {}).version || ""); }, String, 0],
    ["variant", function (r) { return (r.pipeline || {}).variant || (r.config || {}).variant; }, String, 0],
    ["precision", function (r) { return (r.pipeline || {}).precision; }, String, 0],
    ["platform", function (r) { var row = rowsFor(r)[0]; return row ? row.platform_label : (r.platform || {}).fingerprint; }, String, 0],
    ["scenario", function (r) { return (r.metrics || {}).scenario; }, String, 0],
    ["batch size", function (r) { return (r.metrics || {}).batch_size; }, fmtInt, 0],
    ["top-1", accuracyOf("top1"), fmtPct, 1],
    ["top-5", accuracyOf("top5"), fmtPct, 1],
    ["p50 latency", lat("p50"), fmtDur, -1],
    ["p90 latency", lat("p90"), fmtDur, -1],
    ["p99 latency", lat("p99"), fmtDur, -1],
    ["p99.9 latency", lat("p99.9"), fmtDur, -1],
    ["mean latency", lat("mean"), fmtDur, -1],
    ["throughput", function (r) { return ((r.metrics || {}).throughput || {}).samples_per_s; }, fmtRate, 1],
    ["peak memory", function (r) { return (r.metrics || {}).peak_rss_bytes; }, fmtBytes, -1],
    ["energy / sample", function (r) { var m = r.metrics || {}; return m.energy && typeof m.energy === "object" ? m.energy.joules_per_sample : m.energy_j_per_sample; }, fmtEnergy, -1],
    ["validity", function (r) { return (r.metrics || {}).validity; }, String, 0],
    ["queries", function (r) { return (r.metrics || {}).queries; }, fmtInt, 0],
    ["started", function (r) { return r.started; }, fmtDate, 0],
    ["cr version", function (r) { return r.cr_version; }, String, 0]
  ];
  function lat(k) { return function (r) { return ((r.metrics || {}).latency_ns || {})[k]; }; }
  function accuracyOf(k) {
    return function (r) {
      if (r.validation) return r.validation[k];
      var row = rowsFor(r).filter(function (x) { return isNum(x[k]); })[0];
      return row ? row[k] : undefined;
    };
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
    Promise.all(uids.map(function (u) { return loadResult(u).then(function (r) { return r; }, function () { return null; }); }))
      .then(function (recs) {
        if (token !== S.token) return;
        var missing = uids.filter(function (u, i) { return !recs[i]; });
        status.textContent = missing.length ? "Not on this site: " + missing.join(", ") : "Relative differences are against the first column.";
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
            var text = x === undefined || x === null || x === "" ? DASH : spec[2](x);
            var cell = h("td", { class: (isNum(x) ? "num " : "") + "result-col" }, text);
            if (i > 0 && spec[3] && isNum(x) && isNum(base) && base !== 0) {
              var rel = (x - base) / Math.abs(base);
              var better = rel * spec[3] > 0;
              cell.appendChild(h("div", { class: "diff " + (Math.abs(rel) < 1e-9 ? "" : better ? "better" : "worse") },
                (rel >= 0 ? "+" : "") + (rel * 100).toFixed(1) + " %"));
            }
            return cell;
          })));
        });
        main.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "compare", id: "compare" }, h("thead", null, head), body)));

        var keys = [];
        recs.forEach(function (r) { Object.keys(r.config || {}).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
        var differing = keys.filter(function (k) {
          var vals = recs.map(function (r) { return JSON.stringify((r.config || {})[k]); });
          return vals.some(function (x) { return x !== vals[0]; });
        });
        main.appendChild(h("h2", null, "Configuration differences"));
        if (!differing.length) main.appendChild(h("p", { class: "note" }, "The configurations are the same."));
        else {
          main.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "compare-config" },
            h("thead", null, h("tr", null, h("th", null, "parameter"), recs.map(function (r) { return h("th", { class: "mono" }, r.uid); }))),
            h("tbody", null, differing.map(function (k) {
              return h("tr", null, h("th", { scope: "row" }, k), recs.map(function (r) { return h("td", null, fmtAny((r.config || {})[k])); }));
            })))));
        }
      });
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
    } else if (r.view === "compare") {
      renderCompare(main, r.arg.split(",").map(function (u) { return u.trim(); }).filter(function (u) { return UID_RE.test(u); }));
    } else {
      main.appendChild(h("h1", null, "Page not found"));
      main.appendChild(h("p", null, h("a", { href: "#/leaderboard" }, "Go to the leaderboard")));
    }
    hook.view = r.view;
    hook.renders++;
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
    window.addEventListener("hashchange", render);
    render();
    hook.timings.rendered = performance.now();
    hook.ready = true;
  }

  boot();
})();
