/* reefkit results dashboard: the one statistic of a comparison (after core.js).
 *
 * cr/results/significance.py, step for step, so that the compare page's table, its
 * significance block, `cr results compare` and `cr reproduce` give the same verdicts and
 * intervals for the same pair (tests/fixtures/stat_vectors.json: both implementations must
 * reproduce it; tests/test_stat_vectors.py checks both):
 *   - the point ratio B / A is the records' own figures (metrics.latency_ns.p50/p90/p99/mean,
 *     metrics.throughput.queries_per_s), computed by the harness from all samples;
 *   - the samples: each run's raw latencies thinned to at most SAMPLES_MAX, every
 *     ceil(n / SAMPLES_MAX)-th in time order (the site keeps exactly these);
 *   - a moving-block bootstrap: blocks of ceil(sqrt(n)), start floor(u * (n - block + 1)),
 *     u from mulberry32 seeded SEED, RESAMPLES resamples of A, then of B; quantiles linear
 *     between closest ranks; throughput follows the mean latency (queries/s ~ 1 / mean);
 *   - the interval: the 2.5% and 97.5% quantiles of ratio_i * (point / thinned-sample ratio),
 *     widened to contain its point should it not;
 *   - verdict: faster / slower when the whole interval is beyond +-MIN_EFFECT (3%), else
 *     inconclusive (within noise).
 * Sums run left to right in doubles; whole-nanosecond latencies keep them exact (Python's
 * integer sums) below 2^53 ns.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, obj = C.obj, isNum = C.isNum, txt = C.txt;
  var S = { confidence: 0.95, minEffect: 0.03, resamples: 1000, samplesMax: 2048, minSamples: 20, seed: 0 };
  S.rule = S.confidence * 100 + "% interval of B/A; faster or slower only when the whole interval is beyond +-" +
    S.minEffect * 100 + "%, else inconclusive (within noise)";
  // [key, label, where in the record, quantile (null: the mean), which way is better]
  var JUDGED = [
    ["p50_ns", "p50 latency", ["metrics", "latency_ns", "p50"], 0.5, "lower"],
    ["p90_ns", "p90 latency", ["metrics", "latency_ns", "p90"], 0.9, "lower"],
    ["p99_ns", "p99 latency", ["metrics", "latency_ns", "p99"], 0.99, "lower"],
    ["mean_ns", "mean latency", ["metrics", "latency_ns", "mean"], null, "lower"],
    ["throughput_qps", "throughput", ["metrics", "throughput", "queries_per_s"], null, "higher"]
  ];

  function mulberry32(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function quantile(s, q) {
    var pos = q * (s.length - 1), lo = Math.floor(pos), hi = Math.min(lo + 1, s.length - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
  }
  function thin(values, limit) {
    limit = limit || S.samplesMax;
    var n = values.length;
    if (n <= limit) return values.slice();
    var step = Math.ceil(n / limit), out = [];
    for (var i = 0; i < n; i += step) out.push(values[i]);
    return out;
  }
  function mean(values, n) {
    var total = 0;
    for (var i = 0; i < n; i++) total += values[i];
    return total / n;
  }
  function numeric(x, y) { return x - y; }
  function figures(sorted, m) { return [quantile(sorted, 0.5), quantile(sorted, 0.9), quantile(sorted, 0.99), m]; }
  function resampleStats(values, draw, resamples) {  // [p50, p90, p99, mean] of each moving-block resample
    var n = values.length, block = Math.max(1, Math.ceil(Math.sqrt(n))), blocks = Math.ceil(n / block), span = n - block + 1;
    var sample = new Float64Array(blocks * block), out = [];
    for (var k = 0; k < resamples; k++) {
      var at = 0;
      for (var b = 0; b < blocks; b++) {
        var s = Math.floor(draw() * span);
        for (var j = 0; j < block; j++) sample[at++] = values[s + j];
      }
      var used = sample.slice(0, n), m = mean(used, n);
      used.sort();  // a Float64Array sorts numerically
      out.push(figures(used, m));
    }
    return out;
  }
  function numberAt(r, path) {
    var v = r;
    for (var i = 0; i < path.length; i++) v = obj(v)[path[i]];
    return isNum(v) ? v : null;
  }
  function uidText(r) { var u = obj(r).uid; return u === undefined || u === null ? "None" : txt(u); }
  function missingReason(r, values) {
    var status = obj(r).status;
    if (status !== undefined && status !== null && status !== "ok") {
      return "result " + uidText(r) + " has status " + txt(status) + " (a failed run has no latencies to judge)";
    }
    if (values === null || values === undefined) {
      if (obj(r).raw === null || obj(r).raw === undefined) {
        return "result " + uidText(r) + " carries no raw latencies (its \"raw\" is null: exported with --no-raw, or recorded " +
          "without them), so only its summary is known and the bootstrap has nothing to resample";
      }
      return "result " + uidText(r) + " has no raw latencies that could be read";
    }
    if (values.length < S.minSamples) {
      return "result " + uidText(r) + " has only " + values.length + " latencies; a confidence interval needs at least " + S.minSamples;
    }
    return null;
  }
  function verdict(lo, hi, better, minEffect) {
    minEffect = isNum(minEffect) ? minEffect : S.minEffect;
    if (better === "lower") { var l = 1 / hi; hi = 1 / lo; lo = l; }
    if (lo > 1 + minEffect) return "faster";
    if (hi < 1 / (1 + minEffect)) return "slower";
    return "inconclusive";
  }
  function scenarioOf(r) { return obj(obj(r).metrics).scenario; }
  function whyNotThroughput(a, b) {
    var sa = scenarioOf(a), sb = scenarioOf(b);
    if (sa === "server" || sb === "server") return "the server scenario's throughput is set by its arrival rate";
    var other = [];
    [sa, sb].forEach(function (s) {
      var t = s === undefined || s === null ? "None" : txt(s);
      if (s !== "single-stream" && other.indexOf(t) < 0) other.push(t);
    });
    if (other.length) {
      other.sort();
      return "only single-stream throughput (one query at a time) follows the latencies; this pair has " + other.join(", ");
    }
    return null;
  }

  // B against the baseline A, as cr.results.significance.compare_pair returns it. la, lb: each
  // run's raw latencies in time order (null when it has none): the site's samples (already thinned:
  // thinning them again changes nothing) or a run's whole list.
  function comparePair(a, b, la, lb, opts) {
    opts = opts || {};
    var resamples = isNum(opts.resamples) ? opts.resamples : S.resamples, seed = isNum(opts.seed) ? opts.seed : S.seed;
    var minEffect = isNum(opts.minEffect) ? opts.minEffect : S.minEffect;
    var out = { baseline: obj(a).uid, uid: obj(b).uid, missing: null, samples: null, metrics: [], beyond_noise: false };
    var why = missingReason(a, la) || missingReason(b, lb);
    if (why) { out.missing = why; return out; }
    var ta = thin(la), tb = thin(lb);
    out.samples = [ta.length, tb.length];
    var draw = mulberry32(seed), sa = resampleStats(ta, draw, resamples), sb = resampleStats(tb, draw, resamples);
    var pa = figures(ta.slice().sort(numeric), mean(ta, ta.length)), pb = figures(tb.slice().sort(numeric), mean(tb, tb.length));
    var loQ = (1 - S.confidence) / 2, hiQ = 1 - loQ;
    JUDGED.forEach(function (spec, index) {
      var key = spec[0], label = spec[1], better = spec[4], va = numberAt(a, spec[2]), vb = numberAt(b, spec[2]);
      var row = { metric: key, label: label, better: better, baseline: va, value: vb, ratio: null, ci: null, widened: false,
                  verdict: null, why: null };
      out.metrics.push(row);
      if (key === "throughput_qps") {
        index = 3;
        row.why = whyNotThroughput(a, b);
        if (row.why) return;
      }
      if (va === null || vb === null) { row.why = "result " + uidText(va === null ? a : b) + " states no " + label; return; }
      if (!(va > 0 && vb > 0 && pa[index] > 0 && pb[index] > 0)) { row.why = "a " + label + " of zero has no ratio"; return; }
      var point = vb / va, thinned, ratios = [], i;
      if (key === "throughput_qps") {
        thinned = pa[index] / pb[index];
        for (i = 0; i < sa.length; i++) if (sb[i][index] > 0) ratios.push(sa[i][index] / sb[i][index]);
      } else {
        thinned = pb[index] / pa[index];
        for (i = 0; i < sa.length; i++) if (sa[i][index] > 0) ratios.push(sb[i][index] / sa[i][index]);
      }
      if (!ratios.length) { row.why = "every resample of a run has a " + label + " of zero"; return; }
      var shift = point / thinned;
      ratios = ratios.map(function (r) { return r * shift; }).sort(numeric);
      var lo = quantile(ratios, loQ), hi = quantile(ratios, hiQ);
      if (!(lo <= point && point <= hi)) { row.widened = true; lo = Math.min(lo, point); hi = Math.max(hi, point); }
      row.ratio = point;
      row.ci = [lo, hi];
      row.verdict = verdict(lo, hi, better, minEffect);
    });
    out.beyond_noise = out.metrics.some(function (m) { return m.verdict === "faster" || m.verdict === "slower"; });
    return out;
  }

  // A record's samples as the site holds them (record.raw, set by data.js's loadResult: at most
  // SAMPLES_MAX in time order), null when it has none to resample.
  function siteSamples(r) {
    var raw = obj(r).raw;
    if (raw === null || raw === undefined || !Array.isArray(obj(raw).samples_ns) || (obj(raw).problem && !raw.samples_ns.length)) return null;
    return raw.samples_ns.filter(function (x) { return isNum(x) && x >= 0; });
  }
  // The pair of two records on this site, computed once per pair (the table and the significance block share it).
  var pairs = new WeakMap();
  function sitePair(a, b) {
    var byB = pairs.get(a);
    if (!byB) { byB = new WeakMap(); pairs.set(a, byB); }
    if (!byB.has(b)) byB.set(b, comparePair(a, b, siteSamples(a), siteSamples(b)));
    return byB.get(b);
  }

  C.stats = { settings: S, JUDGED: JUDGED, mulberry32: mulberry32, quantile: quantile, thin: thin, verdict: verdict,
              comparePair: comparePair, siteSamples: siteSamples, sitePair: sitePair };
})();
