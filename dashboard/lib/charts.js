/* reefkit results dashboard: charts (after data.js).
 *
 * Chart.js (vendor/, loaded on first use), colours and shapes, and the axis ranges and
 * ticks every chart of the site uses (the Pareto plot, the latency charts).
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, loadScript = C.loadScript;

  var CHART_JS = "vendor/chart.js-4.6.1/chart.umd.min.js";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  // Chart.js point styles and the character that stands for each in the legend
  var SHAPES = [["circle", "\u25CF"], ["triangle", "\u25B2"], ["rect", "\u25A0"], ["rectRot", "\u25C6"],
                ["crossRot", "\u2715"], ["cross", "\u271A"], ["star", "\u2733"]];
  var DASHES = [[], [6, 4], [2, 3], [10, 3, 2, 3], [1, 6]];

  function loadChart() {
    return loadScript(CHART_JS).then(function () {
      var Chart = window.Chart;
      if (!Chart.__crConfigured) {
        Chart.defaults.animation = false;
        Chart.defaults.maintainAspectRatio = false;
        var css = getComputedStyle(document.documentElement);
        Chart.defaults.color = css.getPropertyValue("--fg").trim() || "#1d2330";
        Chart.defaults.borderColor = css.getPropertyValue("--line").trim() || "#d9dee7";
        Chart.__crConfigured = true;
      }
      return Chart;
    });
  }

  function colourMap(values, palette) {
    var m = new Map();
    values.forEach(function (v, i) { m.set(v, (palette || PALETTE)[i % (palette || PALETTE).length]); });
    return m;
  }
  function distinct(rows, f) {
    var s = new Set();
    rows.forEach(function (r) { s.add(f(r)); });
    return Array.from(s).sort();
  }

  // An axis range with room around the points, so that none sits on the frame (half of it
  // clipped): 6 % of the span each side (a factor on a logarithmic axis). An accuracy axis
  // spans at least 2 points, kept below 100 % where the points allow, so that points all at
  // one value (100 % say) are not squeezed against an edge.
  function axisRange(values, log, percent) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (v < lo) lo = v; if (v > hi) hi = v; });
    if (!(lo <= hi)) return log ? { min: 1, max: 10 } : { min: 0, max: 1 };
    if (log) {
      if (hi / lo < 1.01) { lo /= 1.5; hi *= 1.5; }
      var f = Math.pow(10, Math.max(0.05, (Math.log10(hi) - Math.log10(lo)) * 0.06));
      return { min: lo / f, max: hi * f };
    }
    if (percent && hi - lo < 2) {
      var need = 2 - (hi - lo), up = Math.max(0, Math.min(need / 2, 100 - hi));
      hi += up;
      lo -= need - up;
    }
    var span = hi - lo;
    if (!(span > Math.abs(hi) * 1e-9)) { var d = Math.abs(hi) * 0.05 || 1; lo -= d; hi += d; span = hi - lo; }
    return { min: lo - span * 0.06, max: hi + span * 0.06 };
  }

  // Ticks chosen here rather than by Chart.js (whose logarithmic axis labels every tick of
  // the last decades, "5.0006.000"): on a logarithmic axis 1, 2 and 5 times powers of ten
  // (only the powers when that makes more than 9, every n-th power beyond 9 decades); on a
  // linear axis about 6 steps of 1, 2, 2.5 or 5 times a power of ten. Labels show the digits
  // the step needs and no more. accuracy: no tick beyond 0-100 %.
  function niceStep(span, count) {
    var raw = span / count, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    var nice = m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10;
    return { step: nice * p, decimals: Math.max(0, -Math.floor(Math.log10(nice * p)) + (nice === 2.5 ? 1 : 0)) };
  }
  function fmtTickValue(v, decimals) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e15 || a < 1e-6) return v.toExponential(decimals === undefined ? 1 : Math.min(3, Math.max(0, decimals)));
    if (decimals === undefined) return String(+v.toPrecision(3));
    return v.toLocaleString("en-US", { minimumFractionDigits: Math.min(20, decimals), maximumFractionDigits: Math.min(20, decimals) });
  }
  function linearTicks(min, max, count, bounded) {
    if (!(max > min) || !isFinite(max - min)) return { ticks: [], decimals: 0 };
    var s = niceStep(max - min, count), out = [];
    var first = Math.ceil(min / s.step), last = Math.floor(max / s.step);
    for (var k = first; k <= last && out.length < 50; k++) {
      var v = k * s.step;
      if (!bounded || (v >= 0 && v <= 100)) out.push(v);
    }
    return { ticks: out, decimals: s.decimals };
  }
  function logTicks(min, max) {
    var a = Math.floor(Math.log10(min)), b = Math.ceil(Math.log10(max)), out = [];
    var every = Math.max(1, Math.ceil((b - a) / 9));
    for (var set = 0; set < 3; set++) {  // 1-2-5, else 1-3, else the powers of ten alone
      var mantissas = [[1, 2, 5], [1, 3], [1]][set];
      out = [];
      for (var e = a; e <= b; e++) {
        if ((e - a) % every) continue;
        mantissas.forEach(function (m) {
          var v = +(m * Math.pow(10, e)).toPrecision(1);
          if (v >= min && v <= max) out.push(v);
        });
      }
      if (out.length <= 9) break;
    }
    return out.length < 2 ? null : out;  // fewer: a narrow range, which linear steps label better
  }
  function axisOptions(measure, log, range) {
    var format = { decimals: undefined };
    return {
      type: log ? "logarithmic" : "linear", min: range.min, max: range.max, bounds: "data",
      title: { display: true, text: measure.title },
      ticks: { maxRotation: 0, minRotation: 0, autoSkip: true, autoSkipPadding: 12, includeBounds: false,
               callback: function (value) { return fmtTickValue(Number(value), format.decimals); } },
      afterBuildTicks: function (scale) {
        var values = log ? logTicks(range.min, range.max) : null;
        if (values) format.decimals = undefined;
        else {
          var lin = linearTicks(range.min, range.max, 6, measure.percent);
          values = lin.ticks;
          format.decimals = lin.decimals;
        }
        scale.ticks = values.map(function (v) { return { value: v }; });
      }
    };
  }

  function destroyCharts() {
    S.charts.forEach(function (c) { try { c.destroy(); } catch (e) { /* already gone */ } });
    S.charts = [];
  }

  Object.assign(C, {
    PALETTE: PALETTE, SHAPES: SHAPES, DASHES: DASHES, loadChart: loadChart, colourMap: colourMap, distinct: distinct,
    axisRange: axisRange, fmtTickValue: fmtTickValue, axisOptions: axisOptions, destroyCharts: destroyCharts
  });
})();
