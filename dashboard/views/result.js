/* reefkit results dashboard: the result page (#/result/<uid>).
 *
 * The page is the overview table and then a table of sections (C.resultSections: {id,
 * render(main, rec, ctx)}, in display order; ctx: {m: metrics, v: validation, err: error
 * (each an object or null), row: the leaderboard row of the record's configuration, token});
 * trust.js adds the phases before the latency charts, profile.js the profile after the
 * machine's state. A section that has nothing to show adds nothing.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, add = C.add, clear = C.clear, track = C.track, UID_RE = C.UID_RE, DASH = C.DASH;
  var obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum, short = C.short, resultHref = C.resultHref, compareHref = C.compareHref;
  var fmtDur = C.fmtDur, fmtPct = C.fmtPct, fmtRate = C.fmtRate, fmtBytes = C.fmtBytes, fmtEnergy = C.fmtEnergy, fmtInt = C.fmtInt;
  var fmtDate = C.fmtDate, fmtAny = C.fmtAny, fmtCount = C.fmtCount;
  var kv = C.kv, objectTable = C.objectTable, badge = C.badge, pre = C.pre, steps = C.steps, section = C.section, joined = C.joined;
  var subjectOf = C.subjectOf, titleOf = C.titleOf, loadResult = C.loadResult, loadRuns = C.loadRuns, rowsFor = C.rowsFor;
  var loadChart = C.loadChart, axisOptions = C.axisOptions, axisRange = C.axisRange, fmtTickValue = C.fmtTickValue;

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
    var ctx = { m: m, v: v, err: err, row: row, token: token };
    RESULT_SECTIONS.all().forEach(function (s) { s.render(main, rec, ctx); });
  }

  var RESULT_SECTIONS = C.resultSections = new C.Table();
  [
    { id: "error", render: function (main, rec, ctx) {
      var err = ctx.err;
      if (!err) return;
      var es = section("Error", "error");
      es.appendChild(h("div", { class: "error-box" }, h("strong", null, txt(err.type || err.kind || "error")), ": ", txt(err.message)));
      if (err.hint) es.appendChild(h("p", null, "Hint: ", txt(err.hint)));
      if (err.stderr_tail) es.appendChild(pre(txt(err.stderr_tail)));
      main.appendChild(es);
    } },
    { id: "reproduction", render: function (main, rec) {
      if (rec.reproduction !== undefined && rec.reproduction !== null) main.appendChild(reproductionSection(rec.reproduction));
    } },
    { id: "metrics", render: function (main, rec, ctx) { if (ctx.m) main.appendChild(metricsSection(ctx.m)); } },
    { id: "latency", render: function (main, rec, ctx) {
      if (rec.raw && typeof rec.raw === "object" && Array.isArray(rec.raw.samples_ns)) main.appendChild(latencySection(rec, ctx.token));
    } },
    { id: "validation", render: function (main, rec, ctx) { if (ctx.v) main.appendChild(validationSection(ctx.v)); } },
    { id: "machine", render: function (main, rec, ctx) {
      var m = ctx.m;
      if (rec.machine || (m && (m.energy || m.memory))) main.appendChild(machineSection(rec));
    } },
    { id: "placement", render: function (main, rec) {
      if (rec.placement && typeof rec.placement === "object" && !Array.isArray(rec.placement)) main.appendChild(placementSection(obj(rec.placement)));
    } },
    { id: "parity", render: function (main, rec) {
      if (!rec.parity || typeof rec.parity !== "object") return;
      var parity = obj(rec.parity), ps = section("Parity", "parity");
      ps.appendChild(kv([["outcome", badge(parity.outcome)], ["tolerance", parity.tolerance]]));
      ps.appendChild(objectTable(parity.pairs, [["backends", "Backends", function (b) { return joined(b, " vs "); }],
        ["samples", "Samples"], ["max_abs_diff", "Max abs diff"], ["top1_agreement", "Top-1 agreement"], ["ok", "OK"]]));
      main.appendChild(ps);
    } },
    { id: "software", render: function (main, rec) { main.appendChild(softwareSection(rec)); } },
    { id: "config", render: function (main, rec) {
      var config = obj(rec.config), cs = section("Configuration", "config");
      cs.appendChild(kv(Object.keys(config).map(function (k) { return [k, config[k]]; })));
      main.appendChild(cs);
    } },
    { id: "backend", render: function (main, rec) {
      var backend = obj(rec.backend), info = obj(backend.info);
      var two = h("div", { class: "cols-2" });
      var bs = section("Backend", "backend");
      bs.appendChild(kv([["name", backend.name], ["entry", backend.entry], ["origin", backend.origin], ["options", backend.options]]
        .concat(Object.keys(info).map(function (k) { return [k, info[k]]; }))));
      two.appendChild(bs);
      two.appendChild(platformSection(obj(rec.platform)));
      main.appendChild(two);
    } },
    { id: "pipeline", render: function (main, rec) {
      if (!rec.pipeline || typeof rec.pipeline !== "object") return;
      var pipeline = obj(rec.pipeline), pls = section("Pipeline", "pipeline");
      pls.appendChild(kv([["variant", pipeline.variant], ["precision", pipeline.precision],
        ["sha256", h("span", { class: "mono" }, txt(pipeline.sha256 || DASH))],
        ["pre-processing", steps(pipeline.preprocess)], ["post-processing", steps(pipeline.postprocess)]]));
      if (rec.model_file && typeof rec.model_file === "object") {
        var mf = obj(rec.model_file);
        pls.appendChild(kv([["model file", mf.path], ["model sha256", h("span", { class: "mono" }, txt(mf.sha256 || DASH))]]));
      }
      main.appendChild(pls);
    } },
    { id: "components", render: function (main, rec) {
      var comp = section("Components", "components");
      comp.appendChild(objectTable(rec.components, [["ref", "Ref"], ["uid", "uid"], ["repo", "Repository"],
        ["sha256", "sha256", function (s) { return h("span", { class: "mono" }, short(txt(s), 20)); }]]));
      main.appendChild(comp);
    } },
    { id: "history", render: historySection },
    { id: "record", render: function (main, rec) {
      var raw = section("Record", "record");
      raw.appendChild(h("details", null, h("summary", null, "The whole record as JSON (raw latencies shortened)"), pre(rec)));
      main.appendChild(raw);
    } }
  ].forEach(function (s) { RESULT_SECTIONS.add(s); });

  // The runs of the record's configuration (data/runs.js, loaded now), newest first.
  function historySection(main, rec, ctx) {
    var token = ctx.token, row = ctx.row;
    var hist = section("Runs of this configuration", "history");
    hist.appendChild(h("p", { class: "note" }, "Loading\u2026"));
    main.appendChild(hist);
    track(loadRuns().then(function (all) {
      if (token !== S.token) return;
      clear(hist);
      var key = all.keys.has(rec.uid) ? all.keys.get(rec.uid) : row ? row.key : null;
      var runs = sameConfiguration(rec, row, key === null ? [] : all.byKey.get(key) || []);
      if (!runs.length) return;
      hist.appendChild(h("h2", null, "Runs of this configuration"));
      hist.appendChild(h("p", { class: "note" }, "Same model or solution, variant and precision, backend, platform, " +
        "scenario and configuration label (how long or how often a run measured is not part of it)."));
      hist.appendChild(objectTable(runs.slice(0, 100), [
        ["time", "Time", fmtDate], ["action", "Action"], ["status", "Status", badge], ["scenario", "Scenario"],
        ["config", "Config"], ["p50_ns", "p50", fmtDur], ["throughput", "Throughput", fmtRate], ["top1", "Top-1", fmtPct],
        ["uid", "Result", function (u) { return u === rec.uid ? h("span", { class: "sub" }, "this one") :
          h("span", null, h("a", { href: resultHref(u) }, u), " ", h("a", { href: compareHref([rec.uid, u]) }, "(compare)")); }]
      ], "runs"));
      if (runs.length > 100) hist.appendChild(h("p", { class: "note" }, "The newest 100 of " + runs.length + " runs."));
    }, function () { clear(hist); add(hist, [h("h2", null, "Runs of this configuration"), h("p", { class: "note" }, "data/runs.js did not load.")]); }));
  }

  // The runs of one configuration: the builder groups runs by model or solution, backend,
  // variant, precision and platform (data/runs.js "key"); within that, a configuration is also
  // the scenario and the configuration label (cr.results.summary.config_label: the settings
  // that change what is measured, never min_duration_s, max_duration_s, warmup_* and the other
  // measurement knobs), exactly as leaderboard rows are told apart.
  function sameConfiguration(rec, row, runs) {
    var own = runs.filter(function (r) { return r.uid === rec.uid; })[0];
    var scenario = own ? own.scenario || "" : row ? row.scenario || "" : "";
    var config = own ? own.config || "" : row ? row.config || "" : "";
    return runs.filter(function (r) { return (r.scenario || "") === scenario && (r.config || "") === config; });
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

  // -- where the work ran: the record's "placement" (docs/placement.md) --
  function placementSection(p) {
    var s = section("Placement", "placement");
    var by = obj(p.by_provider), nodes = isNum(p.nodes) ? p.nodes : null, unit = txt(p.unit) || "units";
    var names = Object.keys(by).filter(function (k) { return isNum(by[k]); }).sort(function (a, b) { return by[b] - by[a]; });
    var pairs = [["backend", txt(p.backend)], ["requested", joined(arr(p.requested))]];
    if (p.device) pairs.push(["device", txt(p.device)]);
    pairs.push(["counted", nodes !== null ? fmtInt(nodes) + " " + unit : "not reported"]);
    if (arr(p.required).length) pairs.push(["requirement", [badge(p.verdict), " " + txt(p.rule)]]);
    pairs.push(["how", txt(p.how)]);
    s.appendChild(kv(pairs, "placement"));
    if (names.length) {
      s.appendChild(objectTable(names.map(function (k) {
        return { provider: k, count: by[k], share: nodes ? by[k] / nodes : null };
      }), [["provider", "Provider"], ["count", "Count (" + unit + ")"],
           ["share", "Share", function (x) { return isNum(x) ? (x * 100).toFixed(1) + " %" : DASH; }]], "placement-providers"));
    }
    if (arr(p.required).length) {
      s.appendChild(objectTable(p.required, [["name", "Required"],
        ["min_share", "At least", function (x) { return isNum(x) ? (x * 100).toFixed(0) + " %" : DASH; }],
        ["share", "Got", function (x) { return isNum(x) ? (x * 100).toFixed(1) + " %" : DASH; }],
        ["ok", "Met", function (x) { return x === true ? "yes" : x === false ? badge("FAIL") : DASH; }]]));
    }
    var fallback = obj(p.fallback_ops), ops = Object.keys(fallback);
    if (ops.length) s.appendChild(h("p", { class: "note" }, "On the CPU: " + ops.slice(0, 20).map(function (k) { return k + " x" + txt(fallback[k]); }).join(", ")));
    return s;
  }

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

  C.view({ id: "result", render: function (main, arg) {
    if (UID_RE.test(arg)) renderResult(main, arg);
    else main.appendChild(h("p", { class: "error-box" }, "Not a result id."));
  } });
})();
