/* reefkit results dashboard: the data (after core.js).
 *
 * Data comes as scripts written by `cr dashboard build`: data/index.js (leaderboard rows),
 * data/runs.js (every run, loaded when a detail page wants the history) and
 * data/results/<bundle>.js (the records of a few dozen files, loaded when one of them is
 * opened; CR_RESULTS["<bundle>:<uid>"] = {source, raw, record}). Rows are read by column
 * name: the data names its columns ("columns", from the builder's table of fields), so
 * no script here knows a position. Also: the filter bar and the filtered, sorted rows
 * that the leaderboard and the Pareto plot share.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, obj = C.obj, arr = C.arr, UID_RE = C.UID_RE, TRACE_HREF = C.TRACE_HREF;
  var BIG_FILTER = 300;  // a filter with more values than this is a text box

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

  // Latencies from a side file travel as base64 of their bytes ("samples_b64": the builder
  // copies the file's bytes rather than writing numbers as text): of each value's k low
  // bytes as k planes when every value fits them ("samples_planes": k <= 4; plane b holds
  // byte b of every value), else of little-endian int64s. The views read "samples_ns", the
  // numbers. Every latency is far below 2**53, so Number() is exact.
  function withSamples(raw) {
    if (!raw || typeof raw !== "object" || typeof raw.samples_b64 !== "string") return raw;
    var bin = atob(raw.samples_b64), bytes = new Uint8Array(bin.length), values = [], i, j;
    for (i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var planes = raw.samples_planes;
    if (planes >= 1 && planes <= 4 && bytes.length % planes === 0) {
      var n = bytes.length / planes;
      for (j = 0; j < n; j++) {
        var v = 0;
        for (i = planes - 1; i >= 0; i--) v = v * 256 + bytes[i * n + j];
        values.push(v);
      }
    } else if (planes === undefined) {
      var view = new DataView(bytes.buffer);
      for (j = 0; j + 8 <= bytes.length; j += 8) values.push(Number(view.getBigInt64(j, true)));
    }
    var out = {};
    Object.keys(raw).forEach(function (k) { if (k !== "samples_b64" && k !== "samples_planes") out[k] = raw[k]; });
    out.samples_ns = values;
    return out;
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
        rec.raw = withSamples(entry.raw);
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
      var col = C.columns.get(S.sort.col), dir = S.sort.dir, get = col.sortValue || function (r) { return r[col.id]; };
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

  Object.assign(C, {
    decode: decode, decodeColumns: decodeColumns, loadScript: loadScript, loadResult: loadResult, loadRuns: loadRuns,
    rowsFor: rowsFor, FILTERS: FILTERS, filteredRows: filteredRows, filterBar: filterBar
  });
})();
