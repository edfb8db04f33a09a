/* reefkit results dashboard: the tune-run view (#/study[/<name>]).
 *
 * cr tune stores each trial's records with record["study"] = {name, uid, trial} (and,
 * where it says so, "recommended": true on the pick's records, "feasible": false on a trial
 * a constraint excluded). #/study lists the studies on the site; #/study/<name> lists the
 * trials (configuration, p50 with its 95% interval, top-1 with its interval, status), draws
 * the study's Pareto plot (p50 latency vs top-1, or vs throughput when no trial has an
 * accuracy) by cr.results.pareto's rule (lib/pareto.js: the line joins the front, tied
 * points ringed, dominated ones faint), and names the recommendation when the records do.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, clear = C.clear, track = C.track, DASH = C.DASH, isNum = C.isNum;
  var resultHref = C.resultHref, fmtDur = C.fmtDur, fmtPct = C.fmtPct, fmtRate = C.fmtRate, badge = C.badge, loadRuns = C.loadRuns;
  var T = C.settings;

  function studyHref(name) { return "#/study/" + encodeURIComponent(name); }

  function studyRuns(all) {
    var rowOf = new Map();
    S.rows.forEach(function (r) { if (!rowOf.has(r.key)) rowOf.set(r.key, r); });
    var out = [];
    all.byKey.forEach(function (runs, key) {
      var row = rowOf.get(key) || {};
      runs.forEach(function (run) { if (run.study) out.push({ run: run, row: row }); });
    });
    return out;
  }

  // A trial's figures: its newest successful benchmark's latency and throughput, its newest
  // validation's accuracy (runs come newest first).
  function figures(u) {
    var bench = u.items.filter(function (x) { return x.run.action === "benchmark" && x.run.status === "ok" && isNum(x.run.p50_ns); })[0];
    var val = u.items.filter(function (x) { return x.run.action === "validate" && isNum(x.run.top1); })[0];
    var b = bench ? bench.run : {}, v = val ? val.run : {};
    return { p50_ns: b.p50_ns, p50_lo: b.p50_lo, p50_hi: b.p50_hi, throughput: b.throughput, throughput_lo: b.throughput_lo,
             throughput_hi: b.throughput_hi, top1: v.top1, top1_lo: v.top1_lo, top1_hi: v.top1_hi, bench: bench ? b : null, val: val ? v : null };
  }
  function marked(u, word) { return u.items.some(function (x) { return String(x.run.study_mark || "").split(" ").indexOf(word) >= 0; }); }
  function trialName(u) { return "trial " + u.trial; }
  function interval(value, lo, hi, fmt) {
    if (!isNum(value)) return DASH;
    return fmt(value) + (isNum(lo) && isNum(hi) && (lo !== value || hi !== value) ? " [" + fmt(lo) + " \u2013 " + fmt(hi) + "]" : "");
  }

  function renderStudy(main, name) {
    main.appendChild(h("h1", null, name ? "Tune run " + name : "Tune runs"));
    var body = h("div", { id: "study" }, h("p", { class: "note" }, "Loading\u2026"));
    main.appendChild(body);
    var token = S.token;
    track(loadRuns().then(function (all) {
      if (token !== S.token) return;
      clear(body);
      var items = studyRuns(all);
      if (!name) {
        var counts = new Map();
        items.forEach(function (x) {
          if (!counts.has(x.run.study)) counts.set(x.run.study, new Set());
          counts.get(x.run.study).add(x.run.trial);
        });
        if (!counts.size) { body.appendChild(h("p", { class: "note" }, "No result on this site comes from a tune run (cr tune).")); return; }
        body.appendChild(h("ul", null, Array.from(counts.keys()).sort().map(function (c) {
          return h("li", null, h("a", { href: studyHref(c) }, c), " ", h("span", { class: "sub" }, counts.get(c).size + " trials"));
        })));
        return;
      }
      items = items.filter(function (x) { return x.run.study === name; });
      if (!items.length) { body.appendChild(h("p", { class: "error-box" }, "No result of tune run " + name + " on this site.")); return; }
      return draw(body, name, items, token);
    }, function () { clear(body); body.appendChild(h("p", { class: "error-box" }, "data/runs.js did not load.")); }));
  }

  function draw(body, name, items, token) {
    var trials = T.units(items, function (run) { return run.trial !== "" && run.trial !== undefined ? "trial:" + run.trial : ""; });
    trials.forEach(function (u) {
      u.trial = u.items[0].run.trial || DASH;
      u.fig = figures(u);
      u.feasible = !marked(u, "infeasible");
    });
    trials.sort(function (a, b) {
      var x = Number(a.trial), y = Number(b.trial);
      return isFinite(x) && isFinite(y) && x !== y ? x - y : a.first < b.first ? -1 : a.first > b.first ? 1 : 0;
    });
    var varied = T.variedKeys(trials), keys = varied.kept.concat(varied.follows.map(function (f) { return f[0]; })).sort(T.compareKeys);
    var accuracy = trials.some(function (u) { return isNum(u.fig.top1); });
    // One latency definition on the x axis, named: per sample, or per batch of N, when every
    // trial's benchmark timed queries of the same size; when trials vary their batch size, the
    // axis is what cr tune ranked, the p50 of one query, a query being one batch of that
    // trial's size. Trials whose size the site cannot tell leave the title as it is.
    var sizes = {};
    trials.forEach(function (u) { var n = u.fig.bench ? C.querySamples(u.fig.bench) : null; if (n !== null) sizes[n] = true; });
    var sizeList = Object.keys(sizes).map(Number), x = Object.assign({}, C.measures.p50);
    x.latencyKind = sizeList.length === 0 ? null : sizeList.length > 1 ? "query" : sizeList[0] === 1 ? "sample" : "batch";
    if (x.latencyKind === "sample") x.title = C.latencyOfKind(C.measures.p50, "sample").title;
    else if (x.latencyKind === "batch") x.title = "p50 latency per batch of " + sizeList[0] + " samples (ms; lower is better)";
    else if (x.latencyKind === "query") x.title = "p50 latency per query (ms; a query is one batch of the trial's batch size, " +
      sizeList.sort(function (a, b) { return a - b; }).join(", ") + " here: the figure cr tune ranks; lower is better)";
    var y = accuracy ? C.measures.top1 : C.measures.throughput;
    // the Pareto rule over the trials that measured both figures
    var points = trials.map(function (u) {
      return { unit: u, x: x.get(u.fig), y: y.get(u.fig), fx: x.fig(u.fig), fy: y.fig(u.fig), feasible: u.feasible };
    });
    var measured = points.filter(function (p) { return p.x !== null && p.y !== null && p.fx && p.fy; });
    var front = C.paretoClassify(measured, x, y);
    points.forEach(function (p) { if (!p.status) p.status = "unmeasured"; p.unit.point = p; });
    var picked = trials.filter(function (u) { return marked(u, "recommended"); });

    body.appendChild(h("p", { class: "note", id: "study-summary" }, trials.length + " trials, " +
      trials.filter(function (u) { return T.unitStatus(u) === "failed"; }).length + " failed; varied: " +
      (keys.filter(function (k) { return k !== "platform" && k !== "solution"; }).map(T.keyLabel).join(", ") || "nothing") + "."));
    var rec = h("p", { id: "study-recommendation", class: picked.length ? null : "note" });
    if (picked.length) {
      rec.appendChild(h("strong", null, "Recommended: "));
      rec.appendChild(document.createTextNode(picked.map(function (u) { return trialName(u) + " (" + T.settingText(u, keys) + ")"; }).join(", ") +
        ", as this study's records say."));
    } else {
      rec.appendChild(document.createTextNode("The records of this tune run do not say which configuration it recommends: `cr tune " + name +
        " --json` reports the recommendation and its rule. The front below: " +
        (measured.filter(function (p) { return p.status === "front" || p.status === "tied"; }).map(function (p) { return trialName(p.unit); }).join(", ") || "none") + "."));
    }
    body.appendChild(rec);

    var paretoWord = function (p) {
      var name = function (q) { return trialName(q.unit); };
      return p.status === "unmeasured" ? "not measured" : p.status === "infeasible" ? "infeasible (a constraint excludes it)"
        : C.paretoStatusLines(p, name).join(" ");
    };
    body.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "board", id: "study-trials" },
      h("thead", null, h("tr", null, ["Trial", "Configuration", "p50 [95% interval]", "Throughput", "Top-1 [95% interval]", "Status", "Pareto", "Results"]
        .map(function (t) { return h("th", { scope: "col" }, t); }))),
      h("tbody", null, trials.map(function (u) {
        var f = u.fig, p = u.point;
        return h("tr", { "data-trial": u.trial, "data-pareto": p.status, "data-recommended": marked(u, "recommended") ? "1" : null },
          h("td", null, String(u.trial)),
          h("td", null, T.settingText(u, keys.filter(function (k) { return k !== "platform" && k !== "solution"; })),
            u.items[0].run.config ? h("div", { class: "sub" }, u.items[0].run.config) : null),
          h("td", { class: "num" }, interval(f.p50_ns, f.p50_lo, f.p50_hi, fmtDur)),
          h("td", { class: "num" }, fmtRate(f.throughput)),
          h("td", { class: "num" }, interval(f.top1, f.top1_lo, f.top1_hi, fmtPct)),
          h("td", null, badge(T.unitStatus(u)), marked(u, "recommended") ? h("span", { class: "sub" }, " recommended") : null),
          h("td", { "data-status": p.status }, paretoWord(p)),
          h("td", { class: "sub" }, u.items.slice(0, 6).map(function (x) {
            return h("div", null, h("a", { href: resultHref(x.run.uid), title: x.run.error || x.run.uid }, x.run.action));
          })));
      })))));

    var canvas = h("canvas", { id: "study-canvas", role: "img", "aria-label": "Pareto plot of the study" });
    var box = h("div", { class: "chart-box", id: "study-pareto", "data-points": measured.length }, canvas);
    body.appendChild(h("h2", null, "Pareto plot: p50 latency vs " + (accuracy ? "top-1 accuracy" : "throughput")));
    body.appendChild(box);
    body.appendChild(h("p", { class: "note" }, "The line joins the trials on the front by cr.results.pareto's rule: " + C.pareto.RULE +
      ". Ringed: tied with a front trial; faint: dominated; infeasible trials (excluded by a constraint) are grey."));
    C.hook.study = { name: name, xTitle: x.title, latencyKind: x.latencyKind, trials: trials.map(function (u) {
      return { trial: String(u.trial), status: T.unitStatus(u), pareto: u.point.status, setting: T.settingText(u, keys),
               tied_with: (u.point.tiedWith || []).map(function (q) { return String(q.unit.trial); }), recommended: marked(u, "recommended") };
    }), front: front.map(function (p) { return String(p.unit.trial); }), recommended: picked.map(function (u) { return String(u.trial); }) };

    return C.loadChart().then(function (Chart) {
      if (token !== S.token) return;
      var xs = measured.map(function (p) { return p.x; }), ys = measured.map(function (p) { return p.y; });
      var colour = function (p) { return p.status === "dominated" ? "#1f77b430" : p.status === "infeasible" ? "#9ca3af80" : "#1f77b4d0"; };
      var datasets = [{ type: "line", label: "front", data: front.map(function (p) { return { x: p.x, y: p.y }; }), borderColor: "#4b5563",
        borderWidth: 1.5, pointRadius: 0, pointHoverRadius: 0, fill: false, crKind: "frontier" }];
      var tied = measured.filter(function (p) { return p.status === "tied"; });
      if (tied.length) datasets.push(C.paretoTieRings(tied, measured.length));
      datasets.push({ type: "scatter", label: "trials", data: measured, backgroundColor: measured.map(colour),
        borderColor: measured.map(function (p) { return p.status === "dominated" ? "#1f77b450" : "#1f77b4"; }),
        borderWidth: 1.5, pointRadius: 6, pointHoverRadius: 8, crKind: "points" });
      C.destroyCharts();
      var chart = new Chart(canvas, {
        data: { datasets: datasets },
        options: {
          parsing: false, interaction: { mode: "nearest", intersect: true },
          scales: { x: C.axisOptions(x, true, C.axisRange(xs, true, false)), y: C.axisOptions(y, y.log, C.axisRange(ys, y.log, y.percent)) },
          plugins: { legend: { display: false }, tooltip: {
            filter: function (item) { return item.dataset.crKind === "points"; },
            callbacks: { title: function () { return ""; }, label: function (item) {
              var p = item.raw, u = p.unit;
              return [trialName(u) + ": " + T.settingText(u, keys), "p50 " + fmtDur(u.fig.p50_ns) + ", " + (accuracy ? "top-1 " + fmtPct(u.fig.top1) : fmtRate(u.fig.throughput)),
                      paretoWord(p)];
            } } } },
          onClick: function (evt, elements) {
            var el = elements.filter(function (e) { return chart.data.datasets[e.datasetIndex].crKind === "points"; })[0];
            if (!el) return;
            var u = chart.data.datasets[el.datasetIndex].data[el.index].unit;
            location.hash = resultHref(u.items[0].run.uid);
          }
        }
      });
      S.charts.push(chart);
      box.setAttribute("data-drawn", chart.getDatasetMeta(datasets.length - 1).data.length);
    });
  }

  C.view({ id: "study", nav: "Tune runs", render: renderStudy,
           navWhen: function () { return S.rows.some(function (r) { return r.study; }); } });
})();
