/* reefkit results dashboard: profiles (cr profile; after result.js and compare.js).
 *
 * A profile record (action "profile"): per-layer bars (the top 20 and one "other"), the
 * coverage, where its trace lies; on the compare page, the layers of two or three
 * profiles matched side by side (by the module path and op class cr stored per layer,
 * then by position within an op class, as cr/run/layermatch.py does before fusion).
 * Not a view of its own: a section of the result page and one of the compare page.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, h = C.h, DASH = C.DASH, obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum, short = C.short;
  var fmtDur = C.fmtDur, kv = C.kv, objectTable = C.objectTable, isMarkup = C.isMarkup, section = C.section;

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

  C.resultSections.add({ id: "profile", render: function (main, rec) {
    if (rec.action === "profile" && rec.profile) main.appendChild(profileSection(rec));
  } }, { after: "machine" });
  C.compareSections.add({ id: "profiles", render: function (main, recs) {
    if (recs.filter(function (r) { return r.action === "profile"; }).length >= 2) main.appendChild(profileCompareSection(recs));
  } }, { before: "config" });
})();
