/* reefkit results dashboard: phases and verdicts (after result.js and compare.js).
 *
 * The result page's phases (load, first inference, warm-up until stable, steady state) and
 * the harness self-check (--fidelity); the compare page's verdicts and likely causes: the
 * verdicts from lib/stats.js (cr/results/significance.py step for step, on the same samples:
 * the same intervals as `cr results compare`), the causes by the rules of
 * cr/results/causes.py (same constants, same order of causes).
 * Not a view of its own: a section of the result page and one of the compare page.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, h = C.h, DASH = C.DASH, obj = C.obj, arr = C.arr, txt = C.txt, isNum = C.isNum;
  var fmtDur = C.fmtDur, fmtInt = C.fmtInt, fmtCount = C.fmtCount, kv = C.kv, section = C.section;

  var TRUST = { busy: 0.10, loadGap: 0.05, freqGap: 0.05, tempGap: 10 };

  function fmtSeconds(s) {
    if (!isNum(s)) return DASH;
    return s < 1e-3 ? (s * 1e6).toFixed(1) + " \u00B5s" : s < 1 ? (s * 1e3).toFixed(2) + " ms" : s.toFixed(3) + " s";
  }
  function warmupText(w) {
    if (!isNum(w.queries) || w.queries === 0 || w.stopped_by === "disabled") return "none";
    var head = fmtInt(w.queries) + " queries in " + fmtSeconds(w.seconds);
    if (w.stopped_by === "sizing query") return "none (1 query to size LoadGen's plan)";
    if (w.until_stable !== true) return head + " (fixed count)";
    var rule = "window " + txt(w.window) + ", within " + (isNum(w.threshold) ? (w.threshold * 100).toFixed(0) : "?") + " %";
    if (w.converged === true) return head + ", stable after " + txt(w.converged_at) + " (" + rule + ")";
    return head + ", NOT stable: stopped by " + txt(w.stopped_by) + " (" + rule + ")";
  }
  function trustPhases(main, m) {
    var p = obj(m.phases), f = obj(m.fidelity), w = obj(p.warmup), steady = obj(p.steady);
    if (!Object.keys(p).length && !Object.keys(f).length) return;
    var s = section("Phases", "phases");
    var pairs = [
      "load_s" in p ? ["load (import + model)", fmtSeconds(p.load_s)] : null,
      "inputs_s" in p ? ["inputs prepared", fmtSeconds(p.inputs_s)] : null,
      "first_inference_s" in p ? ["first inference", fmtSeconds(p.first_inference_s) +
        (p.first_inference_in === "steady" ? " (the first timed query: no warm-up)" : "")] : null,
      Object.keys(w).length ? ["warm-up", warmupText(w)] : null,
      Object.keys(steady).length ? ["steady state", fmtCount(steady.queries) + " queries in " + fmtSeconds(steady.seconds) +
        ", p50 " + fmtDur(steady.p50_ns)] : null,
      Object.keys(f).length ? ["fidelity (cr p50 / bare loop p50)", isNum(f.ratio) ? f.ratio.toFixed(3) + " (bare p50 " +
        fmtDur(f.bare_p50_ns) + " over " + fmtCount(f.queries) + " queries)" : "not measured"] : null
    ];
    s.appendChild(kv(pairs, "phases"));
    var medians = arr(w.window_medians_ns).filter(isNum);
    if (medians.length) {
      s.appendChild(h("p", { class: "note", "data-warmup-medians": String(medians.length) },
        "Warm-up window medians: " + medians.map(fmtDur).join(" \u2192 ")));
    }
    main.appendChild(s);
  }

  function machineOf(r) { var s = obj(obj(r.machine).summary); return Object.keys(s).length ? s : null; }
  function stackOf(r) {
    var out = {}, info = obj(obj(r.backend).info);
    arr(obj(r.lock).software).forEach(function (s) { s = obj(s); if (s.name) out[txt(s.name)] = txt(s.version); });
    if (info.framework && info.version && !(txt(info.framework) in out)) out[txt(info.framework)] = txt(info.version);
    return out;
  }
  function configOf(r) {
    var c = obj(r.config), p = obj(r.pipeline), m = obj(r.metrics), b = obj(r.backend);
    return { threads: c.threads, batch_size: isNum(m.batch_size) ? m.batch_size : c.batch_size, variant: p.variant || c.variant,
             precision: p.precision, backend: b.name || c.backend, backend_options: c.backend_options || b.options,
             scenario: c.scenario || m.scenario, engine: c.engine, samples_per_query: c.samples_per_query,
             target_qps: c.target_qps, inputs: c.inputs, include_preprocess: c.include_preprocess, dataset: c.dataset };
  }
  var CONFIG_CAUSES = [["threads", "different thread count"], ["batch_size", "different batch size"], ["variant", "different model variant"],
    ["precision", "different precision"], ["backend", "different backend"], ["backend_options", "different backend options"],
    ["scenario", "different scenario"], ["engine", "different engine"], ["samples_per_query", "different samples per query"],
    ["target_qps", "different target rate"], ["inputs", "different inputs"], ["include_preprocess", "pre-processing timed in one run only"],
    ["dataset", "different dataset"]];
  function trustCauses(a, b, pair) {
    var out = [], sides = {};
    pair.metrics.forEach(function (m) { if (m.verdict === "slower") sides.b = 1; if (m.verdict === "faster") sides.a = 1; });
    var slower = Object.keys(sides).length === 1 ? Object.keys(sides)[0] : null;
    function fits(side) { return slower === null || slower === side; }
    var fa = obj(a.platform).fingerprint, fb = obj(b.platform).fingerprint;
    if (fa && fb && fa !== fb) out.push(["different platform", txt(fa) + " (A) vs " + txt(fb) + " (B)"]);
    var ca = configOf(a), cb = configOf(b);
    CONFIG_CAUSES.forEach(function (c) {
      var x = JSON.stringify(ca[c[0]] === undefined ? null : ca[c[0]]), y = JSON.stringify(cb[c[0]] === undefined ? null : cb[c[0]]);
      if (x !== y) out.push([c[1], c[0] + " " + x + " (A) vs " + y + " (B)"]);
    });
    var ka = stackOf(a), kb = stackOf(b), differ = Object.keys(ka).filter(function (n) { return n in kb && ka[n] !== kb[n] && n !== "python"; }).sort();
    if (differ.length) out.push(["different software versions", differ.map(function (n) { return n + " " + ka[n] + " (A) vs " + kb[n] + " (B)"; }).join(", ")]);
    var ma = machineOf(a), mb = machineOf(b);
    if (ma && mb) {
      if ((ma.throttled === true) !== (mb.throttled === true) && fits(ma.throttled === true ? "a" : "b")) {
        out.push(["throttling", "the machine was throttled during " + (ma.throttled === true ? "A" : "B")]);
      }
      var la = ma.cpu_other_share, lb = mb.cpu_other_share;
      if (isNum(la) && isNum(lb) && Math.max(la, lb) > TRUST.busy && Math.abs(la - lb) > TRUST.loadGap && fits(la > lb ? "a" : "b")) {
        out.push(["background CPU load", "other processes used " + (la * 100).toFixed(0) + " % of the machine's CPU during A vs " +
          (lb * 100).toFixed(0) + " % during B"]);
      }
      if (ma.governor && mb.governor && ma.governor !== mb.governor && ma.governor !== "unknown" && mb.governor !== "unknown") {
        out.push(["different CPU governor", txt(ma.governor) + " (A) vs " + txt(mb.governor) + " (B)"]);
      }
      var qa = ma.freq_mhz_max, qb = mb.freq_mhz_max;
      if (isNum(qa) && isNum(qb) && qa > 0 && qb > 0 && Math.abs(qa - qb) > TRUST.freqGap * Math.max(qa, qb) && fits(qa < qb ? "a" : "b")) {
        out.push(["different CPU frequency", "highest core frequency " + qa.toFixed(0) + " MHz (A) vs " + qb.toFixed(0) + " MHz (B)"]);
      }
      if ((ma.swap_activity === true) !== (mb.swap_activity === true) && fits(ma.swap_activity === true ? "a" : "b")) {
        out.push(["swapping", "the machine swapped during " + (ma.swap_activity === true ? "A" : "B")]);
      }
      var ta = ma.temp_c_max, tb = mb.temp_c_max;
      if (isNum(ta) && isNum(tb) && Math.abs(ta - tb) > TRUST.tempGap && !out.some(function (c) { return c[0] === "throttling"; }) && fits(ta > tb ? "a" : "b")) {
        out.push(["temperature", "highest temperature " + ta.toFixed(0) + " C (A) vs " + tb.toFixed(0) + " C (B)"]);
      }
    }
    return { causes: out, unchecked: !(ma && mb) };
  }
  function trustVerdicts(main, recs) {
    var s = section("Significance", "significance"), S = C.stats.settings;
    s.appendChild(h("p", { class: "note" }, "Each run against the first, by the rule of `cr results compare` and the table above: " + S.rule +
      ". The interval is a moving-block bootstrap of each run's samples (at most " + S.samplesMax + ", as this site keeps them; " +
      S.resamples + " resamples, seed " + S.seed + "), centred on the records' figures."));
    recs.slice(1).forEach(function (r) {
      var pair = C.stats.sitePair(recs[0], r), block = h("div", { class: "verdicts", "data-uid": r.uid });
      pair.beyond = pair.beyond_noise;
      block.appendChild(h("h3", null, txt(r.uid) + " vs baseline " + txt(recs[0].uid)));
      if (pair.missing) block.appendChild(h("p", { class: "note", "data-missing": "1" }, "No confidence interval: " + pair.missing));
      if (pair.metrics.length) {
        block.appendChild(h("table", { class: "verdict-table" }, h("thead", null, h("tr", null, h("th", null, "metric"), h("th", null, "verdict"),
          h("th", null, "B / A"), h("th", null, "95 % interval"))), h("tbody", null, pair.metrics.map(function (m) {
          return h("tr", { "data-metric": m.label, "data-verdict": m.verdict || "unjudged" }, h("th", { scope: "row" }, m.label),
            h("td", { class: "diff " + (m.verdict === "faster" ? "better" : m.verdict === "slower" ? "worse" : "noise") }, m.verdict || "not judged"),
            h("td", { class: "num" }, isNum(m.ratio) ? m.ratio.toFixed(3) : DASH),
            h("td", { class: "num" }, m.ci ? m.ci[0].toFixed(3) + " \u2013 " + m.ci[1].toFixed(3) + (m.widened ? " (widened to contain its ratio)" : "") : txt(m.why)));
        }))));
      }
      if (pair.beyond) {
        var found = trustCauses(recs[0], r, pair);
        if (found.causes.length) {
          block.appendChild(h("p", null, "Likely causes, most likely first:"));
          block.appendChild(h("ol", { class: "causes" }, found.causes.map(function (c) { return h("li", { "data-cause": c[0] }, h("strong", null, c[0]), ": " + c[1]); })));
        } else {
          block.appendChild(h("p", { class: "note" }, "Likely causes: none found in the two records."));
        }
        if (found.unchecked) block.appendChild(h("p", { class: "note" }, "No machine state recorded in a run: governor, frequency, throttling and background load cannot be checked."));
      }
      s.appendChild(block);
    });
    main.appendChild(s);
  }

  C.resultSections.add({ id: "phases", render: function (main, rec, ctx) { if (ctx.m) trustPhases(main, ctx.m); } }, { before: "latency" });
  C.compareSections.add({ id: "significance", render: trustVerdicts }, { after: "config" });
})();
