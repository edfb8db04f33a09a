/* reefkit results dashboard: the compare page (#/compare/<uid>,<uid>[,...]).
 *
 * A table of figures (COMPARE_ROWS), each difference judged against noise, then a table of
 * sections (C.compareSections: {id, render(main, recs)}, in display order): profile.js adds
 * the layers side by side, trust.js the bootstrap verdicts after the configuration differences.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, track = C.track, UID_RE = C.UID_RE, DASH = C.DASH;
  var obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum, resultHref = C.resultHref, quantile = C.quantile;
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
