/* reefkit results dashboard: the shared core (load it first).
 *
 * Every dashboard script is a classic script (ES modules do not load from file:// in
 * Chromium) that registers into one namespace, window.CR_SITE; index.html loads them in a
 * fixed order and app.js, last, routes. No build step. This file holds what every view
 * uses: the test hook, the state, ordered tables (views, leaderboard columns, page
 * sections), the text-only DOM helpers, formatting and small record readers.
 *
 * Security rule: text from a result is only ever set with textContent / createTextNode,
 * attribute values with setAttribute on a fixed list of harmless attributes, links are
 * built here from validated uids, and charts draw text on a canvas. No innerHTML.
 *
 * Robustness rule: a record is data from anywhere. A schema-valid record may hold a string,
 * a list, null or a huge number wherever the schema leaves a field open, so every value
 * read from a record goes through obj() / arr() / isNum() (or String()) before a method is
 * called on it; a view never assumes a field's type.
 */
(function () {
  "use strict";

  var C = window.CR_SITE = {};
  var UID_RE = /^[A-Za-z0-9_-]{1,64}$/;

  var hook = window.CR_DASHBOARD = {
    ready: false, view: "", renders: 0, rowsTotal: 0, rowsShown: 0, rowsFiltered: 0, rowsHidden: 0,
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
    cache: null, rowsByKey: null, partial: {},
    showHidden: false  // the leaderboard lists failed and figure-less rows too (views/leaderboard.js)
  };

  // ---------------------------------------------------------------- ordered tables
  // A table of entries with an id, in display order; a script that extends a view adds its
  // entries before or after a named one ({after: "top1"}), else at the end.
  function Table() { this.items = []; }
  Table.prototype.add = function (entry, where) {
    var at = this.items.length, ref = where && (where.before || where.after);
    if (ref) {
      var i = this.items.findIndex(function (e) { return e.id === ref; });
      if (i >= 0) at = where.before ? i : i + 1;
    }
    if (this.get(entry.id)) throw new Error("dashboard: two entries named " + entry.id);
    this.items.splice(at, 0, entry);
    return entry;
  };
  Table.prototype.get = function (id) { return this.items.find(function (e) { return e.id === id; }) || null; };
  Table.prototype.all = function () { return this.items.slice(); };

  // The table of views: route (the first part of "#/route/arg") -> {id, render(main, arg),
  // nav: link text or null, navWhen(): whether the link shows}. app.js routes through it.
  var views = new Table();
  function view(spec) {
    if (!spec || typeof spec.id !== "string" || typeof spec.render !== "function") throw new Error("dashboard: a view needs an id and a render function");
    return views.add(spec);
  }


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
  function fmtCount(x) { return isNum(x) ? fmtInt(x) : fmtAny(x); }
  function quantile(s, q) {
    var pos = q * (s.length - 1), lo = Math.floor(pos), hi = Math.min(lo + 1, s.length - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
  }

  // ---------------------------------------------------------------- widgets shared by the pages
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

  Object.assign(C, {
    UID_RE: UID_RE, TRACE_HREF: TRACE_HREF, DASH: DASH, hook: hook, S: S, track: track,
    Table: Table, views: views, view: view,
    h: h, add: add, route: route, resultHref: resultHref, compareHref: compareHref, clear: clear,
    isNum: isNum, obj: obj, arr: arr, txt: txt, fmtDur: fmtDur, fmtPct: fmtPct, fmtRate: fmtRate, fmtBytes: fmtBytes,
    fmtEnergy: fmtEnergy, fmtInt: fmtInt, fmtDate: fmtDate, fmtAny: fmtAny, fmtCount: fmtCount, short: short, quantile: quantile,
    kv: kv, isMarkup: isMarkup, objectTable: objectTable, badge: badge, pre: pre, steps: steps, section: section,
    joined: joined, subjectOf: subjectOf, titleOf: titleOf
  });
})();
