/* reefkit results dashboard: profiles (cr profile; after result.js and compare.js).
 *
 * A profile record (action "profile"): per-layer bars (the top 20 by median per query,
 * one "other", the unattributed remainder and the model median, so the shares add up to
 * 100 %), the coverage, the profiler's overhead, where its trace lies; on the compare page, the layers of two or three
 * profiles matched side by side (by the module path and op class cr stored per layer,
 * then by position within an op class, as cr/run/layermatch.py does before fusion).
 * Not a view of its own: a section of the result page and one of the compare page.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, h = C.h, DASH = C.DASH, obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum, short = C.short;
  var fmtDur = C.fmtDur, kv = C.kv, objectTable = C.objectTable, isMarkup = C.isMarkup, section = C.section;

  var PROFILE_TOP = 20;

  // a layer's time per query: the median over the profiled queries (older records: per_query_ns)
  function layerNs(l) { return isNum(l.median_ns) ? l.median_ns : (isNum(l.per_query_ns) ? l.per_query_ns : null); }

  function pct(x) { return isNum(x) ? (100 * x).toFixed(1) + " %" : DASH; }

  // the rows of the table as cr profile prints them: the top layers by median, one "other", the
  // unattributed remainder (model median less the sum of layer medians) and the model itself,
  // so that the shares add up to 100 % of the model median
  function profileRows(layers, summary) {
    var model = obj(summary.model_ns), total = isNum(model.p50) && model.p50 > 0 ? model.p50 : null;
    var share = function (ns) { return isNum(ns) && total ? ns / total : null; };
    var rows = layers.slice(0, PROFILE_TOP).map(function (l) {
      return { name: txt(l.name), op: txt(l.op), ns: layerNs(l), p10: l.p10_ns, p90: l.p90_ns, provider: txt(l.provider),
               share: share(layerNs(l)), kind: "layer" };
    });
    var rest = layers.slice(PROFILE_TOP);
    if (rest.length) {
      var sum = rest.reduce(function (a, l) { return a + (isNum(layerNs(l)) && layerNs(l) > 0 ? layerNs(l) : 0); }, 0);
      rows.push({ name: "other (" + rest.length + " layers)", op: "", ns: sum, share: share(sum), kind: "other" });
    }
    var u = obj(summary.unattributed);
    if (isNum(u.ns)) rows.push({ name: "(unattributed)", op: u.ns < 0 ? "overlap" : "", ns: u.ns, share: share(u.ns), kind: "unattributed",
                                 provider: txt(u.meaning) });
    if (total) rows.push({ name: "(model, profiled)", op: "", ns: total, p10: model.p10, p90: model.p90, share: 1, kind: "model" });
    return rows;
  }

  function profileBars(layers, summary) {
    var rows = profileRows(layers, summary);
    var max = rows.reduce(function (a, r) { return r.kind === "model" ? a : Math.max(a, isNum(r.ns) ? Math.abs(r.ns) : 0); }, 0) || 1;
    return h("div", { class: "table-wrap" }, h("table", { class: "profile-bars", id: "profile-bars" },
      h("thead", null, h("tr", null, ["Layer", "Op", "Median per query", "p10 .. p90", "Share of model median", ""].map(function (t) {
        return h("th", { scope: "col" }, t);
      }))),
      h("tbody", null, rows.map(function (r) {
        var bar = h("span", { class: "profile-bar", title: r.provider || null });
        bar.style.width = (r.kind === "model" ? 0 : 100 * (isNum(r.ns) ? Math.abs(r.ns) : 0) / max).toFixed(1) + "%";
        var spread = isNum(r.p10) && isNum(r.p90) ? fmtDur(r.p10) + " .. " + fmtDur(r.p90) : DASH;
        return h("tr", { "data-layer": r.name, "data-kind": r.kind }, h("td", { class: "mono" }, r.name), h("td", null, r.op),
          h("td", { class: "num" }, fmtDur(r.ns)), h("td", { class: "num" }, spread),
          h("td", { class: "num" }, pct(r.share)), h("td", { class: "bar-cell" }, bar));
      }))));
  }

  function overheadText(o) {
    o = obj(o);
    if (!isNum(o.ratio)) return o.why ? "not measured: " + txt(o.why) : DASH;
    var plain = isNum(o.plain_p50_ns) ? o.plain_p50_ns : o.unprofiled_p50_ns;
    return o.ratio.toFixed(2) + "x: profiled p50 " + fmtDur(o.profiled_p50_ns) + " vs plain p50 " + fmtDur(plain) +
      (o.plain_run ? " (" + txt(o.plain_run) + ")" : "");
  }

  function profileSection(rec) {
    var p = obj(rec.profile), s = obj(p.summary), model = obj(s.model_ns), trace = obj(rec.trace), u = obj(s.unattributed);
    var sec = section("Profile", "profile");
    var where = trace.file ? [rec.dashboard_trace ? h("a", { href: rec.dashboard_trace, "data-trace": "1" }, txt(trace.file)) :
      h("span", { class: "mono" }, txt(trace.file)),
      (rec.dashboard_trace ? " (a copy in this site; the original lies" : " (not copied into this site: it lies") +
      " beside the record in the results store; " + txt(trace.events) + " events, sha256 " + short(txt(trace.sha256), 16) +
      "); open it in Perfetto or chrome://tracing"] : DASH;
    var layers = arr(p.layers).filter(function (l) { return l && typeof l === "object" && !Array.isArray(l); });
    sec.appendChild(kv([
      ["profiler", p.source], ["level", p.level === "model" ? "model level only" : "per layer"],
      ["queries", txt(s.queries) + " (batch " + txt(s.batch_size) + ")"],
      ["statistic", "median per query over the profiled queries (spread p10 .. p90); shares of the model median"],
      ["model time p50", fmtDur(model.p50) + " per query" + (isNum(model.p10) && isNum(model.p90) ?
        " (p10 .. p90 " + fmtDur(model.p10) + " .. " + fmtDur(model.p90) + ")" : "") + " (profiled)"],
      isNum(s.layer_median_sum_ns) ? ["layer time", fmtDur(s.layer_median_sum_ns) + " per query: the sum of " + txt(s.layers) + " layer medians"] : null,
      ["coverage", isNum(s.coverage) ? s.coverage.toFixed(3) + " (sum of layer medians / model median)" : DASH],
      isNum(u.ns) ? ["unattributed", fmtDur(u.ns) + " (" + pct(u.share) + "): " + txt(u.meaning)] : null,
      ["profiler overhead", overheadText(p.overhead || s.overhead)],
      p.note ? ["note", p.note] : null,
      ["trace", isMarkup(where) ? where : txt(where)]
    ], "profile-summary"));
    if (layers.length) sec.appendChild(profileBars(layers, s));
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
      var ns = function (c) { return isNum(layerNs(c)) ? layerNs(c) : 0; };
      var diff = cells.slice(1).reduce(function (a, c) { var d = ns(c) - ns(l); return Math.abs(d) > Math.abs(a) ? d : a; }, 0);
      // a fused node is named after the last layer it absorbed: its partner's path names the layer better
      var label = l.fused && cells[1].path && cells[1].path !== l.path ? cells[1].path : l.path || l.name;
      rows.push({ layer: txt(label), cls: txt(l["class"] || l.op), cells: cells, diff: diff });
    });
    rows.sort(function (a, b) { return Math.abs(b.diff) - Math.abs(a.diff); });
    sec.appendChild(h("p", { class: "note" }, rows.length + " layers matched of " + base.length + " (" + txt(obj(profs[0].backend).name) +
      "); median per query; largest difference first; ratio against the first profile. Fused nodes are shown by cr profile --compare."));
    sec.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "profile-compare", id: "profile-compare-table" },
      h("thead", null, h("tr", null, h("th", { scope: "col" }, "Layer"), h("th", { scope: "col" }, "Op class"), profs.map(function (r, k) {
        return h("th", { scope: "col" }, txt(obj(r.backend).name) + (k ? " (ratio)" : ""));
      }))),
      h("tbody", null, rows.map(function (r) {
        return h("tr", { "data-layer": r.layer }, h("td", { class: "mono" }, r.layer), h("td", null, r.cls), r.cells.map(function (c, k) {
          var a = layerNs(c), b = layerNs(r.cells[0]);
          var ratio = k && isNum(a) && isNum(b) && b > 0 ? " (" + (a / b).toFixed(2) + "x)" : "";
          return h("td", { class: "num", title: txt(c.name) + " " + txt(c.op) }, fmtDur(a) + ratio);
        }));
      })))));
    return sec;
  }

  C.resultSections.add({ id: "profile", render: function (main, rec) {
    if (rec.action === "profile" && rec.profile) main.appendChild(profileSection(rec));
  } }, { after: "machine" });
  C.compareSections.add({ id: "profiles", render: function (main, recs) {
    if (recs.filter(function (r) { return r.action === "profile"; }).length >= 2) main.appendChild(profileCompareSection(recs));
  } }, { before: "config" });
})();
