/* reefkit results dashboard: the compare page (#/compare/<uid>,<uid>[,...]).
 *
 * A table of figures (COMPARE_ROWS), each difference judged against noise, then a table of
 * sections (C.compareSections: {id, render(main, recs)}, in display order): profile.js adds
 * the layers side by side, trust.js the bootstrap verdicts after the configuration differences.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, track = C.track, UID_RE = C.UID_RE, DASH = C.DASH;
  var obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum, resultHref = C.resultHref;
  var fmtDur = C.fmtDur, fmtPct = C.fmtPct, fmtRate = C.fmtRate, fmtBytes = C.fmtBytes, fmtEnergy = C.fmtEnergy;
  var fmtDate = C.fmtDate, fmtAny = C.fmtAny, fmtCount = C.fmtCount;
  var subjectOf = C.subjectOf, titleOf = C.titleOf, loadResult = C.loadResult, rowsFor = C.rowsFor;

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
    ["p50 latency", lat("p50"), fmtDur, -1, "stat"],
    ["p90 latency", lat("p90"), fmtDur, -1, "stat"],
    ["p99 latency", lat("p99"), fmtDur, -1, "stat"],
    ["p99.9 latency", lat("p99.9"), fmtDur, -1, "tail"],
    ["mean latency", lat("mean"), fmtDur, -1, "stat"],
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
  function accuracyOf(k) {
    return function (r) {
      if (r.validation && typeof r.validation === "object") return obj(r.validation)[k];
      var row = rowsFor(r).filter(function (x) { return isNum(x[k]); })[0];
      return row ? row[k] : undefined;
    };
  }

  // Noise. A difference is coloured (green better, red worse) only when it is beyond noise:
  //  - p50, p90, p99 and mean latency and throughput: the verdict of lib/stats.js, the one
  //    statistic `cr results compare`, `cr reproduce` and the significance block below use
  //    (a bootstrap interval of B / A from the samples this site keeps, which are the CLI's;
  //    beyond noise only when the whole interval is beyond +-3 %). Throughput (samples/s)
  //    takes the queries/s verdict when both runs put the same number of samples in a query
  //    (the ratio is then the same); otherwise, and without raw samples, it is not judged;
  //  - memory and energy: a difference under PLAIN_NOISE (5 %) is noise;
  //  - accuracy (the same samples give the same figure): under 0.05 points is noise;
  //  - p99.9: not judged (too few samples that far in the tail).
  var PLAIN_NOISE = 0.05, ACCURACY_NOISE = 0.0005;
  var STAT_OF = { "p50 latency": "p50_ns", "p90 latency": "p90_ns", "p99 latency": "p99_ns", "mean latency": "mean_ns",
                  "throughput": "throughput_qps" };
  function noiseOf(r) {
    var m = obj(r.metrics), l = obj(m.latency_ns);
    if (isNum(m.noise)) return m.noise;
    return isNum(l.iqr) && isNum(l.p50) && l.p50 > 0 ? l.iqr / l.p50 : undefined;
  }
  function sameSamplesPerQuery(a, b) {  // cr.results.compare.same_samples_per_query
    var ta = obj(obj(a.metrics).throughput), tb = obj(obj(b.metrics).throughput);
    var qa = ta.queries_per_s, qb = tb.queries_per_s, sa = ta.samples_per_s, sb = tb.samples_per_s;
    if (![qa, qb, sa, sb].every(function (x) { return isNum(x) && x !== 0; })) return false;
    return Math.abs((sa / qa) / (sb / qb) - 1) < 1e-9;
  }
  // -> {verdict: "better" | "worse" | "noise" | "same" | "unjudged", why}
  function judge(spec, base, x, baseRec, rec) {
    var diff = x - base, rel = diff / Math.abs(base), rule = spec[4], why;
    if (Math.abs(rel) < 1e-9) return { verdict: "same", why: "no difference" };
    if (rule === "tail") return { verdict: "unjudged", why: "not judged: a run has too few samples beyond its p99.9 to tell noise from a difference" };
    if (rule === "accuracy") {
      why = "noise: accuracy differences under 0.05 points";
      if (Math.abs(diff) <= ACCURACY_NOISE) return { verdict: "noise", why: why };
    } else if (rule === "plain") {
      if (Math.abs(rel) <= PLAIN_NOISE) return { verdict: "noise", why: "within noise: differences under " + PLAIN_NOISE * 100 + " % are not judged" };
      why = "beyond the " + PLAIN_NOISE * 100 + " % noise threshold";
    } else {
      if (rule === "throughput" && !sameSamplesPerQuery(baseRec, rec)) {
        return { verdict: "unjudged", why: "not judged: the runs put different numbers of samples in a query (see throughput in Significance: queries/s)" };
      }
      var pair = C.stats.sitePair(baseRec, rec), key = STAT_OF[spec[0]];
      var m = pair.metrics.filter(function (r) { return r.metric === key; })[0];
      if (pair.missing) return { verdict: "unjudged", why: "not judged: " + pair.missing };
      if (!m || !m.verdict) return { verdict: "unjudged", why: "not judged: " + txt(m ? m.why : "no such figure") };
      var ci = m.ci[0].toFixed(3) + " \u2013 " + m.ci[1].toFixed(3) + " (B / A, 95 %)";
      if (m.verdict === "inconclusive") return { verdict: "noise", why: "within noise: interval " + ci + " not wholly beyond \u00B1" + C.stats.settings.minEffect * 100 + " %" };
      return { verdict: m.verdict === "faster" ? "better" : "worse", why: m.verdict + ": interval " + ci + " beyond \u00B1" + C.stats.settings.minEffect * 100 + " %" };
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
        COMPARE_SECTIONS.all().forEach(function (s) { s.render(main, recs); });
      }));
  }

  var COMPARE_SECTIONS = C.compareSections = new C.Table();
  COMPARE_SECTIONS.add({ id: "config", render: function (main, recs) {
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
  } });

  C.view({ id: "compare", render: function (main, arg) {
    renderCompare(main, arg.split(",").map(function (u) { return u.trim(); }).filter(function (u) { return UID_RE.test(u); }));
  } });
})();
