/* reefkit results dashboard: the Pareto plot view (#/pareto).
 *
 * What can go on an axis is a table of measures (C.measures: name -> {title, better, log,
 * percent, what, word, get(row), fig(row): the figure with its 95% interval in the row's
 * units}), what can be plotted a table of plots (C.plots: {id, label, x, y: measure names,
 * accuracy: frontiers per dataset rather than per scenario}); detection.js adds AP50 to both.
 * Which points are on a frontier is cr.results.pareto's rule (lib/pareto.js): the line joins
 * the "front" points, "tied" ones are ringed, dominated ones drawn faint. C.paretoClassify,
 * C.paretoTieRings and C.paretoStatusLines serve other plots too (the study page).
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, hook = C.hook, h = C.h, add = C.add, clear = C.clear, isNum = C.isNum, track = C.track;
  var resultHref = C.resultHref, filteredRows = C.filteredRows, filterBar = C.filterBar;
  var fmtPct = C.fmtPct, fmtDur = C.fmtDur, fmtRate = C.fmtRate, fmtBytes = C.fmtBytes, fmtInt = C.fmtInt;
  var SHAPES = C.SHAPES, DASHES = C.DASHES, colourMap = C.colourMap, distinct = C.distinct, loadChart = C.loadChart;
  var axisOptions = C.axisOptions, axisRange = C.axisRange, destroyCharts = C.destroyCharts;

  var FRONTIER_COLOURS = ["#4b5563", "#9a3412", "#1e40af", "#166534", "#6b21a8", "#9f1239", "#0f766e", "#854d0e"];

  // What a plot can put on an axis: the value of a row (null when it has none that can be drawn),
  // the axis title, which way is better (1 higher, -1 lower) and whether a logarithmic axis suits it.
  var LINEAR_LIMIT = 1e12, LOG_LOW = 1e-200, LOG_HIGH = 1e200;  // beyond these a value is not drawn (and counted as left out)
  var figure = C.pareto.figure;
  var MEASURES = {
    p50: { title: "p50 latency (ms, lower is better)", better: -1, log: true, what: "a p50 latency", word: "faster", latency: true,
           get: function (r) { return isNum(r.p50_ns) && r.p50_ns > 0 ? r.p50_ns / 1e6 : null; },
           fig: function (r) { return figure(r, r.p50_ns, r.p50_lo, r.p50_hi); } },
    throughput: { title: "throughput (samples/s, higher is better)", better: 1, log: true, what: "a throughput", word: "higher in throughput",
                  get: function (r) { return isNum(r.throughput) && r.throughput > 0 ? r.throughput : null; },
                  fig: function (r) { return figure(r, r.throughput, r.throughput_lo, r.throughput_hi); } },
    top1: { title: "top-1 accuracy (%)", better: 1, log: false, percent: true, what: "a top-1 accuracy", word: "more accurate",
            get: function (r) { return isNum(r.top1) && isNum(r.top1 * 100) ? r.top1 * 100 : null; },
            fig: function (r) { return figure(r, r.top1, r.top1_lo, r.top1_hi); } },
    memory: { title: "peak memory (MiB, lower is better)", better: -1, log: true, what: "a peak memory", word: "smaller in memory",
              get: function (r) { return isNum(r.peak_rss) && r.peak_rss > 0 ? r.peak_rss / 1048576 : null; },
              fig: function (r) { return figure(r, r.peak_rss); } }
  };
  // One latency definition per axis. A latency figure is the time of one query: a query of one
  // sample gives a per-sample latency, a query of a batch (offline, batch > 1, multi-stream) a
  // per-batch one, and the two never share an axis. Rows carry "query_samples" (samples in one
  // query, as measured); a row of an older build has its configuration label's batch= (or
  // samples_per_query= in multi-stream) instead; a row with neither is left out and counted.
  var LATENCY_KINDS = {
    sample: { label: "per sample", title: "p50 latency per sample (ms, queries of 1 sample; lower is better)",
              what: "a per-sample p50 latency" },
    batch: { label: "per batch", title: "p50 latency per batch (ms per query of several samples; lower is better)",
             what: "a per-batch p50 latency" }
  };
  function querySamples(r) {
    if (isNum(r.query_samples) && r.query_samples >= 1) return r.query_samples;
    var word = r.scenario === "multi-stream" ? "samples_per_query" : "batch";
    var m = new RegExp("(?:^| )" + word + "=(\\d+)(?: |$)").exec(r.config || "");
    return m ? parseInt(m[1], 10) : null;
  }
  function latencyKind(r) {
    var n = querySamples(r);
    return n === null ? null : n === 1 ? "sample" : "batch";
  }
  C.latencyKind = latencyKind;
  C.querySamples = querySamples;
  // The measure restricted to one latency definition (its title and what it lacks say which).
  function ofKind(measure, kind) {
    if (!measure.latency) return measure;
    var k = LATENCY_KINDS[kind], out = Object.assign({}, measure);
    out.title = k.title;
    out.what = k.what;
    out.kind = kind;
    out.get = function (r) { return latencyKind(r) === kind ? measure.get(r) : null; };
    return out;
  }
  C.latencyOfKind = ofKind;

  // A measure's figure with its interval (a measure without fig(): its plotted value, no interval).
  function figOf(measure, r) { return measure.fig ? measure.fig(r) : figure(r, measure.get(r)); }
  // Accuracy plots: one frontier per task, dataset and platform. Performance plots (every
  // benchmark, with or without an accuracy): one per task, scenario and platform.
  C.measures = MEASURES;
  // Accuracy plots: one frontier per task, dataset and platform. Performance plots (every
  // benchmark, with or without an accuracy): one per task, scenario and platform.
  var PLOTS = C.plots = new C.Table();
  [
    { id: "latency", label: "p50 latency vs top-1 accuracy", x: "p50", y: "top1", accuracy: true },
    { id: "throughput", label: "throughput vs top-1 accuracy", x: "throughput", y: "top1", accuracy: true },
    { id: "latency-throughput", label: "p50 latency vs throughput (every benchmark)", x: "p50", y: "throughput" },
    { id: "latency-memory", label: "p50 latency vs peak memory (every benchmark)", x: "p50", y: "memory" }
  ].forEach(function (p) { PLOTS.add(p); });
  // id -> {id, label, x, y: the measures themselves, accuracy}; null when no such plot
  function plotById(id) {
    var p = PLOTS.get(id);
    return p && { id: p.id, label: p.label, x: MEASURES[p.x], y: MEASURES[p.y], accuracy: !!p.accuracy };
  }

  // The statuses of a group's points by cr.results.pareto's rule (lib/pareto.js), on the
  // figures and intervals in the rows' own units (p.fx, p.fy: {value, lo, hi}; p.feasible);
  // each point gets status, tiedWith and dominatedBy (other points of the group). Returns
  // the "front" points in x order: what the line joins.
  function classify(points, x, y) {
    var objectives = [{ name: "x", better: x.better > 0 ? "higher" : "lower" }, { name: "y", better: y.better > 0 ? "higher" : "lower" }];
    var byId = new Map();
    points.forEach(function (p, i) { byId.set(String(i), p); });
    var result = C.pareto.analyse(points.map(function (p, i) {
      return { id: String(i), values: { x: p.fx, y: p.fy }, feasible: p.feasible };
    }), objectives);
    result.points.forEach(function (a) {
      var p = byId.get(a.id);
      p.status = a.status;
      p.tiedWith = a.tied_with.map(function (id) { return byId.get(id); });
      p.dominatedBy = a.dominated_by === null ? null : byId.get(a.dominated_by);
    });
    return points.filter(function (p) { return p.status === "front"; }).sort(function (a, b) { return a.x - b.x; });
  }
  C.paretoClassify = classify;

  function renderPareto(main) {
    var token = S.token;
    var backends = distinct(S.rows, function (r) { return r.backend; });
    var platforms = distinct(S.rows, function (r) { return r.platform; });
    var colours = colourMap(backends);
    var shapes = new Map(), dashes = new Map(), platformLabel = new Map();
    platforms.forEach(function (p, i) { shapes.set(p, SHAPES[i % SHAPES.length]); dashes.set(p, DASHES[i % DASHES.length]); });
    S.rows.forEach(function (r) { platformLabel.set(r.platform, r.platform_label); });
    if (!PLOTS.get(S.paretoX)) {  // first visit: the accuracy plot, unless no row has an accuracy to plot
      S.paretoX = S.rows.some(function (r) { return MEASURES.top1.get(r) !== null && MEASURES.p50.get(r) !== null; })
        || !S.rows.some(function (r) { return MEASURES.p50.get(r) !== null; }) ? "latency" : "latency-throughput";
    }

    if (!LATENCY_KINDS[S.paretoLatency]) {  // first visit: per sample when some row has it, else per batch
      S.paretoLatency = S.rows.some(function (r) { return MEASURES.p50.get(r) !== null && latencyKind(r) === "sample"; })
        || !S.rows.some(function (r) { return latencyKind(r) === "batch"; }) ? "sample" : "batch";
    }
    var latencyPick = h("select", { "data-control": "latency", "aria-label": "latency definition", on: { change: function () {
      S.paretoLatency = latencyPick.value; draw(); } } },
      Object.keys(LATENCY_KINDS).map(function (k) { return h("option", { value: k, text: LATENCY_KINDS[k].label }); }));
    latencyPick.value = S.paretoLatency;
    var latencyLabel = h("label", { title: "a latency is the time of one query: of one sample, or of a batch; the two are never on one axis" },
      "Latency ", latencyPick);
    var axis = h("select", { "data-control": "x-axis", "aria-label": "what to plot", on: { change: function () {
      S.paretoX = axis.value; draw(); } } },
      PLOTS.all().map(function (p) { return h("option", { value: p.id, text: p.label }); }));
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
    main.appendChild(h("div", { class: "toolbar" }, h("label", null, "Plot ", axis), latencyLabel,
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
              "top-1 " + fmtPct(r.top1) + ", p50 " + fmtDur(r.p50_ns) + latencyWords(r) + ", " + fmtRate(r.throughput) + ", " + fmtBytes(r.peak_rss)];
    }

    function draw() {
      if (token !== S.token) return;
      track(loadChart().then(function (Chart) {
        if (token !== S.token) return;
        var plot = plotById(S.paretoX) || plotById("latency");
        plot.x = ofKind(plot.x, S.paretoLatency);
        plot.y = ofKind(plot.y, S.paretoLatency);
        latencyLabel.hidden = !plot.x.latency && !plot.y.latency;
        var xLog = S.paretoLog && plot.x.log, yLog = S.paretoLog && plot.y.log;
        var rows = filteredRows();
        var sets = new Map(), groups = new Map(), count = 0, missing = 0, plotted = [];
        rows.forEach(function (r) {
          var x = plot.x.get(r), y = plot.y.get(r);
          if (x === null || y === null || !drawable(x, xLog) || !drawable(y, yLog)) { missing++; return; }
          var k = r.backend + "\u0000" + r.platform;
          if (!sets.has(k)) sets.set(k, { backend: r.backend, platform: r.platform, data: [] });
          var p = { x: x, y: y, row: r.i, fx: figOf(plot.x, r), fy: figOf(plot.y, r) };
          sets.get(k).data.push(p);
          var line = plot.accuracy ? [r.task || "no task", r.dataset || "no dataset"] : [r.task || "no task", r.scenario || "no scenario"];
          var gk = line.concat([r.platform]).join("\u0000");
          if (!groups.has(gk)) groups.set(gk, { line: line.join("\u0000"), lineLabel: line.join(" \u00B7 "), platform: r.platform, points: [] });
          groups.get(gk).points.push(p);
          plotted.push(r.i);
          count++;
        });
        var lineColours = colourMap(distinct(Array.from(groups.values()), function (g) { return g.line; }), FRONTIER_COLOURS);
        var datasets = [], frontiers = [], ties = [];
        Array.from(groups.keys()).sort().forEach(function (gk) {
          var g = groups.get(gk), f = classify(g.points, plot.x, plot.y);
          g.points.forEach(function (p) { if (p.status === "tied") ties.push(p); });
          if (f.length < 1) return;
          var label = "frontier " + g.lineLabel + " on " + platformLabel.get(g.platform);
          frontiers.push({ label: label, line: g.lineLabel, platform: g.platform, points: f.length, from: g.points.length,
                           rows: f.map(function (p) { return p.row; }),
                           tied: g.points.filter(function (p) { return p.status === "tied"; }).map(function (p) { return p.row; }) });
          datasets.push({ type: "line", label: label, data: f.map(function (p) { return { x: p.x, y: p.y }; }),
            borderColor: lineColours.get(g.line), borderDash: dashes.get(g.platform),
            borderWidth: 1.5, pointRadius: 0, pointHoverRadius: 0, fill: false, crKind: "frontier" });
        });
        if (ties.length) datasets.push(tieRings(ties, count));
        Array.from(sets.values()).sort(function (a, b) {
          return a.backend < b.backend ? -1 : a.backend > b.backend ? 1 : a.platform < b.platform ? -1 : a.platform > b.platform ? 1 : 0;
        }).forEach(function (s) {
          // two datasets, the dominated points faint (one colour per dataset: per-point colours
          // cost Chart.js seconds at 50,000 points)
          var colour = colours.get(s.backend), label = s.backend + " on " + platformLabel.get(s.platform);
          [false, true].forEach(function (faint) {
            var data = s.data.filter(function (p) { return (p.status === "dominated") === faint; });
            if (!data.length) return;
            datasets.push({ type: "scatter", label: label + (faint ? " (dominated)" : ""), data: data, pointStyle: shapes.get(s.platform)[0],
              backgroundColor: colour + (faint ? "30" : "b0"), borderColor: faint ? colour + "50" : colour,
              borderWidth: 1.5, pointRadius: count > 5000 ? 2.5 : 5, pointHoverRadius: 8, crKind: "points" });
          });
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
                  label: function (item) { return rowLines(S.rows[item.raw.row]).concat(statusLines(item.raw, rowName)); }
                }
              }
            },
            onHover: function (evt, elements) {
              var el = elements.filter(function (e) { return chart.data.datasets[e.datasetIndex].crKind === "points"; })[0];
              clear(hover);
              if (!el) { add(hover, h("span", { class: "note" }, "Hover a point to see its row; click it to open the result.")); return; }
              var r = S.rows[chart.data.datasets[el.datasetIndex].data[el.index].row];
              var point = chart.data.datasets[el.datasetIndex].data[el.index];
              add(hover, [h("strong", null, rowLines(r)[0]), h("div", null, rowLines(r).slice(1).join(" \u00B7 ")),
                h("div", { class: "sub", "data-status": point.status || "" }, statusLines(point, rowName).join(" "))]);
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
        box.setAttribute("data-latency", plot.x.kind || plot.y.kind || "");
        var otherKind = 0;  // rows the other latency definition would plot
        if (plot.x.latency || plot.y.latency) {
          var other = S.paretoLatency === "sample" ? "batch" : "sample", base = plotById(plot.id) || plotById("latency");
          var ox = ofKind(base.x, other), oy = ofKind(base.y, other);
          rows.forEach(function (r) { if (ox.get(r) !== null && oy.get(r) !== null) otherKind++; });
        }
        box.setAttribute("data-frontiers", frontiers.length);
        hook.paretoPoints = count;
        hook.pareto = describeChart(Chart, chart, plot, plotted, frontiers);
        note.textContent = fmtInt(count) + (count === 1 ? " point" : " points") + (missing ? "; " + fmtInt(missing) +
          (missing === 1 ? " row is" : " rows are") + " left out because " + (missing === 1 ? "it lacks " : "they lack ") +
          plot.x.what + " or " + plot.y.what + " that can be drawn" : "") +
          (otherKind ? " (" + fmtInt(otherKind) + " of them measure latency " + (S.paretoLatency === "sample" ? "per batch" : "per sample") +
            ": choose Latency: " + (S.paretoLatency === "sample" ? "per batch" : "per sample") + ")" : "") +
          ". Lines: the Pareto frontier of each " +
          (plot.accuracy ? "task, dataset and platform" : "task, scenario and platform") + " joins the points no other point of " +
          "the same dominates, by cr.results.pareto's rule: " + C.pareto.RULE + " (95% intervals from each record's IQR, stdev " +
          "and count, or samples judged). Ringed: tied with a front point (hover it to see which); faint: dominated." +
          (plot.accuracy && count === 0 && S.rows.some(function (r) { return MEASURES.p50.get(r) !== null; })
            ? " No benchmark here has an accuracy: choose \u201Cp50 latency vs throughput\u201D to see them." : "");
        drawLegend(legend, backends.filter(function (b) { return rows.some(function (r) { return r.backend === b; }); }),
          platforms.filter(function (p) { return Array.from(groups.values()).some(function (g) { return g.platform === p; }); }),
          colours, shapes, dashes, platformLabel, lineColours, plot);
      }));
    }
    draw();
  }

  function latencyWords(r) {
    var n = querySamples(r);
    return n === null || !isNum(r.p50_ns) ? "" : n === 1 ? " per sample" : " per batch of " + fmtInt(n);
  }

  function rowName(p) { var o = S.rows[p.row]; return o.name + " " + o.backend + (o.config ? " [" + o.config + "]" : ""); }

  // A ring around each tied point (hovering the point itself names who it ties).
  function tieRings(ties, count) {
    return { type: "scatter", label: "tied", data: ties.map(function (p) { return { x: p.x, y: p.y, row: p.row }; }),
      pointStyle: "circle", backgroundColor: "rgba(0,0,0,0)", borderColor: "#111827", borderWidth: 2,
      pointRadius: count > 5000 ? 5 : 9, pointHoverRadius: count > 5000 ? 5 : 9, crKind: "ties" };
  }
  C.paretoTieRings = tieRings;

  // "tied (within noise) with A, B" / "dominated by C" / "on the front" for a classified point;
  // name(point) says what to call another point.
  function statusLines(p, name) {
    if (p.status === "tied") return ["tied (within noise) with " + p.tiedWith.map(name).join(", ")];
    if (p.status === "dominated") return ["dominated by " + (p.dominatedBy ? name(p.dominatedBy) : "another point")];
    if (p.status === "front") return ["on the front"];
    return p.status ? [p.status] : [];
  }
  C.paretoStatusLines = statusLines;

  function drawable(v, log) { return log ? v > LOG_LOW && v < LOG_HIGH : Math.abs(v) <= LINEAR_LIMIT; }

  // What the chart drew, in pixels, for the tests (and anyone curious): the plot area, each
  // point, each tick label's box, the axis ranges and the frontiers.
  function describeChart(Chart, chart, plot, plotted, frontiers) {
    var area = chart.chartArea, ctx = chart.ctx, out = { plot: plot.id, rows: plotted, frontiers: frontiers,
      area: { left: area.left, top: area.top, right: area.right, bottom: area.bottom }, points: [] };
    chart.data.datasets.forEach(function (d, i) {
      if (d.crKind !== "points") return;
      chart.getDatasetMeta(i).data.forEach(function (el, j) {
        out.points.push({ row: d.data[j].row, x: el.x, y: el.y, r: d.pointRadius, status: d.data[j].status || null,
                          tied_with: (d.data[j].tiedWith || []).map(function (p) { return p.row; }) });
      });
    });
    ["x", "y"].forEach(function (id) {
      var scale = chart.scales[id], font = Chart.helpers.toFont(scale.options.ticks.font);
      ctx.save();
      ctx.font = font.string;
      out[id] = { type: scale.type, min: scale.min, max: scale.max, rotation: scale.labelRotation || 0, labels: [],
                  title: scale.options.title && scale.options.title.text };
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

  C.view({ id: "pareto", nav: "Pareto", render: renderPareto });
})();
