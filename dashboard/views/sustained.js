/* reefkit results dashboard: a sustained run's latency over time (after result.js).
 *
 * A record of `cr benchmark --sustained DURATION` holds metrics.sustained
 * (cr/results/sustained.py): one row per window (p50, p99, queries, and the machine's state
 * read at its end: CPU clock, temperature, load, other processes' CPU share), the throttling
 * onset and the drift verdict, each with its rule. This section shows the verdict, the
 * rules, and a chart of p50/p99 per window beside the CPU clock and the temperature, with
 * the reference span and the onset marked. Nothing is recomputed here: the record's
 * figures are the CLI's. Not a view of its own: a section of the result page.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum, DASH = C.DASH;
  var kv = C.kv, section = C.section, track = C.track, loadChart = C.loadChart;

  function fmtSpan(s) {  // 130 -> "2m10s", as cr.results.sustained.format_duration
    if (!isNum(s)) return DASH;
    if (s < 60) return Math.abs(s - Math.round(s)) < 0.05 ? Math.round(s) + "s" : s.toFixed(1) + "s";
    var whole = Math.round(s), hh = Math.floor(whole / 3600), mm = Math.floor((whole % 3600) / 60), ss = whole % 60;
    return (hh ? hh + "h" : "") + (mm ? mm + "m" : "") + (ss || !(hh || mm) ? ss + "s" : "");
  }

  function sustainedSection(m, token) {
    var b = obj(m.sustained), windows = arr(b.windows).filter(function (w) { return w && typeof w === "object"; });
    var t = obj(b.throttling), d = obj(b.drift), ref = obj(b.reference);
    var s = section("Sustained run", "sustained");
    s.setAttribute("data-windows", String(windows.length));
    s.appendChild(h("p", { class: "verdict", "data-throttled": t.throttled ? "1" : "0", "data-drift": txt(d.drift || "unjudged") },
      txt(b.verdict || DASH)));
    s.appendChild(kv([
      ["length", fmtSpan(b.ran_s) + " in " + windows.length + " windows of " + fmtSpan(b.window_s) + " (asked " + fmtSpan(b.duration_s) + ")"],
      ["reference", txt(ref.label) + ": " + txt(ref.windows) + " window(s), " + txt(ref.queries) + " queries (" + txt(ref.rule) + ")"],
      ["throttling rule", txt(t.rule)],
      ["drift rule", txt(d.rule)],
      ["machine state", txt(b.state_sampled)]
    ], "sustained"));
    if (!windows.length) return s;
    var canvas = h("canvas", { id: "sustained-curve", role: "img", "aria-label": "latency and machine state over time" });
    s.appendChild(h("div", { class: "charts" }, h("div", { class: "chart-small" }, canvas)));
    track(loadChart().then(function (Chart) {
      if (token !== S.token) return;
      var mid = function (w) { return (w.start_s + w.end_s) / 2; };
      var series = function (key, scale) {
        return windows.filter(function (w) { return isNum(w[key]); }).map(function (w) { return { x: mid(w), y: w[key] * scale }; });
      };
      var freq = series("freq_mhz", 1), temp = series("temp_c", 1);
      var sets = [
        { label: "p50 (ms)", data: series("p50_ns", 1e-6), borderColor: "#1f77b4", backgroundColor: "#1f77b4", pointRadius: 0, borderWidth: 1.5, yAxisID: "y" },
        { label: "p99 (ms)", data: series("p99_ns", 1e-6), borderColor: "#ff7f0e", backgroundColor: "#ff7f0e", pointRadius: 0, borderWidth: 1, yAxisID: "y" }
      ];
      if (freq.length) sets.push({ label: "CPU clock (MHz)", data: freq, borderColor: "#2ca02c", backgroundColor: "#2ca02c", pointRadius: 0, borderWidth: 1, borderDash: [6, 4], yAxisID: "y2" });
      if (temp.length) sets.push({ label: "temperature (\u00B0C)", data: temp, borderColor: "#d62728", backgroundColor: "#d62728", pointRadius: 0, borderWidth: 1, borderDash: [2, 3], yAxisID: "y3" });
      var marks = [];
      if (isNum(ref.seconds)) marks.push({ x: ref.seconds, name: "end of the reference" });
      if (isNum(t.onset_s)) marks.push({ x: t.onset_s, name: "throttling onset" });
      var top = Math.max.apply(null, series("p99_ns", 1e-6).map(function (p) { return p.y; }).concat([0]));
      if (marks.length) sets.push({ type: "scatter", label: "marks", data: marks.map(function (p) { return { x: p.x, y: top, name: p.name }; }),
        borderColor: "#7f7f7f", backgroundColor: "#7f7f7f", pointStyle: "triangle", pointRadius: 5, yAxisID: "y" });
      var scales = { x: { type: "linear", title: { display: true, text: "time (s)" }, ticks: { maxRotation: 0 } },
                     y: { title: { display: true, text: "latency (ms)" }, beginAtZero: true } };
      if (freq.length) scales.y2 = { position: "right", title: { display: true, text: "MHz" }, grid: { drawOnChartArea: false } };
      if (temp.length) scales.y3 = { position: "right", title: { display: true, text: "\u00B0C" }, grid: { drawOnChartArea: false } };
      S.charts.push(new Chart(canvas, {
        type: "line",
        data: { datasets: sets },
        options: { parsing: false, plugins: { title: { display: true, text: "Latency over time, with the machine's state" },
          tooltip: { callbacks: { label: function (item) {
            return item.raw.name ? item.raw.name + " at " + fmtSpan(item.raw.x) : item.dataset.label + ": " + item.raw.y.toPrecision(4);
          } } } }, scales: scales }
      }));
      s.setAttribute("data-chart", "1");
    }));
    return s;
  }

  C.resultSections.add({ id: "sustained", render: function (main, rec, ctx) {
    if (ctx.m && ctx.m.sustained && typeof ctx.m.sustained === "object") main.appendChild(sustainedSection(ctx.m, ctx.token));
  } }, { after: "latency" });
})();
