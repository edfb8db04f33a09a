/* reefkit results dashboard: the campaign view (#/campaign[/<name>]).
 *
 * #/campaign: every campaign on the site; #/campaign/<name>: its matrix. A campaign's jobs
 * are told apart by their records (record["campaign"].job); what a job ran is its records'
 * setting (records.SETTING_KEYS and pipeline step parameters, read from what the record
 * says ran), plus its platform and solution. The keys whose values differ between the jobs
 * are the matrix's: the first as columns, the others combined as rows (a key whose value
 * follows from the keys before it, such as the variant of a backend, is named under the
 * table instead). Each cell: its jobs' status (PASS / FAIL of the validation, failed, done
 * without a validation, not run), p50, top-1, and one link per result. When the matrix
 * varies pipeline keys, a pipeline-study table follows: accuracy per variant and its delta
 * to the baseline. Its link shows in the top bar when some leaderboard row comes from a campaign.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, clear = C.clear, track = C.track, DASH = C.DASH, isNum = C.isNum;
  var resultHref = C.resultHref, fmtDur = C.fmtDur, fmtPct = C.fmtPct, badge = C.badge, loadRuns = C.loadRuns;

  function campaignHref(name) { return "#/campaign/" + encodeURIComponent(name); }

  // ---------------------------------------------------------------- settings (shared with study.js)
  // The keys of a setting in display order: records.SETTING_KEYS, then "pipeline" (the
  // pipeline step parameters a unit overrides, together: one variant of the pipeline), then
  // the platform and the solution.
  var SETTING_ORDER = ["backend", "variant", "precision", "threads", "batch_size", "scenario", "engine", "backend_options", "dataset", "split"];
  var KEY_LABEL = { batch_size: "batch", platform: "Platform", solution: "Solution", backend_options: "backend options" };
  function keyLabel(k) { return KEY_LABEL[k] || k; }
  function keyRank(k) {
    var i = SETTING_ORDER.indexOf(k);
    if (i >= 0) return [0, i, ""];
    if (k === "pipeline") return [1, 0, k];
    return [2, k === "platform" ? 0 : k === "solution" ? 1 : 2, k];
  }
  function compareKeys(a, b) {
    var x = keyRank(a), y = keyRank(b);
    for (var i = 0; i < 3; i++) { if (x[i] < y[i]) return -1; if (x[i] > y[i]) return 1; }
    return 0;
  }
  function parseSetting(text) {
    if (typeof text !== "string" || !text) return {};
    try { var v = JSON.parse(text); return v && typeof v === "object" && !Array.isArray(v) ? v : {}; } catch (e) { return {}; }
  }

  // A campaign's or study's run carries its figures' 95% intervals and samples judged as one
  // JSON list (records.FIGURES); read into the run once.
  var FIGURES = ["p50_lo", "p50_hi", "throughput_lo", "throughput_hi", "top1_lo", "top1_hi", "samples", "hits"];
  function readFigures(run) {
    if (run._figures) return;
    run._figures = true;
    var list = [];
    try { list = typeof run.figures === "string" && run.figures ? JSON.parse(run.figures) : []; } catch (e) { list = []; }
    FIGURES.forEach(function (name, i) {
      var v = Array.isArray(list) ? list[i] : null;
      run[name] = name === "hits" ? (typeof v === "string" ? v : null) : isNum(v) ? v : null;
    });
  }

  // Items {run, row} -> units (jobs, trials...) {id, items, setting: {key: value}, first: time}.
  // unitOf(run) names the unit ("" : the run is a unit of its own); a unit's setting takes each
  // key from its first run that has it (benchmarks first), plus the platform and the solution.
  function units(items, unitOf) {
    var byId = new Map();
    items.forEach(function (x) {
      readFigures(x.run);
      var id = unitOf(x.run) || "uid:" + x.run.uid;
      if (!byId.has(id)) byId.set(id, { id: id, items: [], setting: {}, first: x.run.time || "" });
      var u = byId.get(id);
      u.items.push(x);
      if ((x.run.time || "") < u.first) u.first = x.run.time || "";
    });
    byId.forEach(function (u) {
      u.items.sort(function (a, b) { return (a.run.action === "benchmark" ? 0 : 1) - (b.run.action === "benchmark" ? 0 : 1); });
      u.items.forEach(function (x) {
        var s = parseSetting(x.run.setting);
        Object.keys(s).forEach(function (k) { if (!(k in u.setting) && s[k] !== "") u.setting[k] = String(s[k]); });
      });
      var steps = Object.keys(u.setting).filter(function (k) { return k.indexOf("pipeline.") === 0; }).sort();
      if (steps.length) u.setting.pipeline = steps.map(function (k) { return k.slice(9) + "=" + u.setting[k]; }).join(" ");
      steps.forEach(function (k) { delete u.setting[k]; });
      var row = u.items[0].row;
      u.setting.platform = String(row.platform_label || row.platform || "?");
      u.setting.solution = String(row.subject || "?");
    });
    return Array.from(byId.values()).sort(function (a, b) { return a.first < b.first ? -1 : a.first > b.first ? 1 : a.id < b.id ? -1 : 1; });
  }

  function valueOf(u, k) { return k in u.setting ? u.setting[k] : ""; }
  // Values in order: "as declared" ("") first, numbers by value, the rest as text.
  function sortValues(values) {
    var numeric = values.every(function (v) { return v === "" || isFinite(Number(v)); });
    return values.slice().sort(function (a, b) {
      if (a === b) return 0;
      if (a === "") return -1;
      if (b === "") return 1;
      if (numeric) return Number(a) - Number(b);
      return a < b ? -1 : 1;
    });
  }

  // The keys that vary between units: {kept: the matrix's keys in order, follows: [[key, the keys it follows]]}.
  // A key whose value is the same for every unit that agrees on the kept keys before it adds no dimension.
  function variedKeys(list) {
    var keys = new Set();
    list.forEach(function (u) { Object.keys(u.setting).forEach(function (k) { keys.add(k); }); });
    var varied = Array.from(keys).sort(compareKeys).filter(function (k) {
      return new Set(list.map(function (u) { return valueOf(u, k); })).size > 1;
    });
    var kept = [], follows = [];
    varied.forEach(function (k) {
      if (kept.length) {
        var seen = new Map(), dependent = true;
        list.forEach(function (u) {
          var at = JSON.stringify(kept.map(function (q) { return valueOf(u, q); }));
          if (!seen.has(at)) seen.set(at, valueOf(u, k));
          else if (seen.get(at) !== valueOf(u, k)) dependent = false;
        });
        if (dependent) { follows.push([k, kept.slice()]); return; }
      }
      kept.push(k);
    });
    return { kept: kept, follows: follows };
  }

  function settingText(u, keys) {
    var parts = keys.filter(function (k) { return valueOf(u, k) !== ""; }).map(function (k) { return valueLabel(k, valueOf(u, k)); });
    return parts.join(" ") || "as declared";
  }
  // How a header or a setting shows key k's value v ("" : as declared).
  function valueLabel(k, v) {
    if (k === "platform" || k === "solution") return v || DASH;
    if (k === "pipeline") return v ? "pipeline " + v : "pipeline as declared";
    return keyLabel(k) + "=" + (v || "as declared");
  }

  // ---------------------------------------------------------------- statuses
  // A job: failed (a run failed), FAIL / PASS (its validation's outcome), done (no validation).
  var STATUS_ORDER = ["failed", "FAIL", "PASS", "done"];
  function unitStatus(u) {
    if (u.items.some(function (x) { return x.run.status !== "ok"; })) return "failed";
    var outcomes = u.items.filter(function (x) { return x.run.action === "validate"; }).map(function (x) { return String(x.run.outcome || ""); });
    if (outcomes.indexOf("FAIL") >= 0) return "FAIL";
    if (outcomes.indexOf("PASS") >= 0) return "PASS";
    return "done";
  }
  function cellStatus(list) {
    if (!list.length) return "not run";
    var statuses = list.map(unitStatus);
    return STATUS_ORDER.filter(function (s) { return statuses.indexOf(s) >= 0; })[0];
  }
  function bestP50(list) {
    var p = [];
    list.forEach(function (u) { u.items.forEach(function (x) { if (x.run.action === "benchmark" && x.run.status === "ok" && isNum(x.run.p50_ns)) p.push(x.run.p50_ns); }); });
    return p.length ? Math.min.apply(null, p) : null;
  }
  function top1Of(list) {
    for (var i = 0; i < list.length; i++) {
      for (var j = 0; j < list[i].items.length; j++) if (isNum(list[i].items[j].run.top1)) return list[i].items[j].run;
    }
    return null;
  }

  function cell(list, status) {
    if (!list.length) return h("span", { class: "sub" }, "not run");
    var p50 = bestP50(list), top = top1Of(list), items = [];
    list.forEach(function (u) { items = items.concat(u.items); });
    return [
      h("div", null, badge(status), list.length > 1 ? h("span", { class: "sub" }, " " + list.length + " jobs") : null),
      isNum(p50) ? h("div", null, "p50 " + fmtDur(p50)) : null,
      top ? h("div", null, "top-1 " + fmtPct(top.top1)) : null,
      h("div", { class: "sub" }, items.slice(0, 12).map(function (x) {
        return h("div", null, h("a", { href: resultHref(x.run.uid), title: x.run.error || x.run.uid },
          x.run.action + (x.run.config ? " " + x.run.config : "")), x.run.worker ? " on " + x.run.worker : "",
          x.run.status !== "ok" ? h("span", { class: "status-failed" }, " failed") : null);
      }), items.length > 12 ? h("div", null, "+" + (items.length - 12) + " more") : null)
    ];
  }

  // ---------------------------------------------------------------- the matrix
  function matrix(body, name, jobs) {
    var v = variedKeys(jobs), kept = v.kept, colKey, rowKeys;
    if (kept.every(function (k) { return k === "platform" || k === "solution"; })) { colKey = "platform"; rowKeys = ["solution"]; }
    else { colKey = kept[0]; rowKeys = kept.length > 1 ? kept.slice(1) : ["solution"]; }
    var cols = sortValues(Array.from(new Set(jobs.map(function (u) { return valueOf(u, colKey); }))));
    var rowOf = function (u) { return JSON.stringify(rowKeys.map(function (k) { return valueOf(u, k); })); };
    var rowIds = Array.from(new Set(jobs.map(rowOf)));
    rowIds.sort(function (a, b) {
      var x = JSON.parse(a), y = JSON.parse(b);
      for (var i = 0; i < x.length; i++) {
        if (x[i] !== y[i]) return sortValues([x[i], y[i]])[0] === x[i] ? -1 : 1;
      }
      return 0;
    });
    var counts = { PASS: 0, FAIL: 0, failed: 0, done: 0 };
    jobs.forEach(function (u) { counts[unitStatus(u)]++; });
    var notRun = 0, cells = {};
    rowIds.forEach(function (r) {
      cols.forEach(function (c) {
        var list = jobs.filter(function (u) { return rowOf(u) === r && valueOf(u, colKey) === c; });
        cells[r + "\u0000" + c] = list;
        if (!list.length) notRun++;
      });
    });
    body.appendChild(h("p", { class: "note", id: "campaign-summary" }, jobs.length + " jobs: " + counts.PASS + " PASS, " + counts.FAIL +
      " FAIL (validation), " + counts.failed + " failed, " + counts.done + " done without a validation" +
      (notRun ? "; " + notRun + (notRun === 1 ? " cell" : " cells") + " not run" : "") + "."));
    var table = h("table", { class: "board matrix", "data-campaign": name, "data-columns": colKey, "data-rows": rowKeys.join(",") },
      h("thead", null, h("tr", null, h("th", { scope: "col" }, rowKeys.map(keyLabel).join(" \u00B7 ")),
        cols.map(function (c) { return h("th", { scope: "col", "data-value": c }, valueLabel(colKey, c)); }))),
      h("tbody", null, rowIds.map(function (r) {
        var values = JSON.parse(r);
        return h("tr", { "data-value": r }, h("th", { scope: "row" }, rowKeys.map(function (k, i) {
          return valueLabel(k, values[i]);
        }).join(" \u00B7 ")), cols.map(function (c) {
          var list = cells[r + "\u0000" + c], status = cellStatus(list);
          return h("td", { "data-status": status, "data-column": c, "data-platform": colKey === "platform" ? c : null }, cell(list, status));
        }));
      })));
    body.appendChild(h("div", { class: "table-wrap" }, table));
    var rule = "Columns: " + keyLabel(colKey) + "; rows: " + rowKeys.map(keyLabel).join(" \u00D7 ") + ". The keys whose values " +
      "differ between this campaign's jobs (as their records say they ran) make the matrix: the first as columns, the others " +
      "combined as rows. A cell's status: failed when a run of it failed, else FAIL or PASS as its validation judged, done when " +
      "it has no validation, not run when no job of the campaign has that combination.";
    if (v.follows.length) rule += " Not a dimension of their own: " + v.follows.map(function (f) {
      return keyLabel(f[0]) + " (follows " + f[1].map(keyLabel).join(", ") + ")";
    }).join(", ") + ".";
    body.appendChild(h("p", { class: "note", id: "campaign-rule" }, rule));
    return v;
  }

  // ---------------------------------------------------------------- pipeline study
  // Accuracy per variant with its delta to the baseline: the job that overrides no pipeline
  // key, else the first job (the earliest result).
  // Whether two validations can be paired: both kept per-sample correctness on the same samples.
  var PAIRING = { paired: "same samples, per-sample correctness kept: compare gives the verdict",
                  "other samples": "not the same samples: no paired test", "no hits": "a record keeps no per-sample " +
                  "correctness (made before cr kept it): re-run cr validate for a paired test" };
  function pairing(a, b) { return !a.hits || !b.hits ? "no hits" : a.hits === b.hits ? "paired" : "other samples"; }

  function pipelineStudy(body, jobs, v) {
    var keys = v.kept.concat(v.follows.map(function (f) { return f[0]; })).sort(compareKeys);
    var pipe = keys.filter(function (k) { return k === "pipeline"; });
    if (!pipe.length) return;
    var shown = keys.filter(function (k) { return k !== "platform" && k !== "solution"; });
    var base = jobs.filter(function (u) { return pipe.every(function (k) { return valueOf(u, k) === ""; }); })[0] || jobs[0];
    var baseRun = top1Of([base]);
    var sec = h("section", { id: "pipeline-study" }, h("h2", null, "Pipeline study"));
    sec.appendChild(h("p", { class: "note" }, "Top-1 accuracy of each variant and its difference to the baseline (" +
      settingText(base, shown) + ": the job that overrides no pipeline step, else the first job). Intervals: 95% Wilson " +
      "intervals over the samples judged. Whether a difference is beyond sampling noise takes a paired test on the same " +
      "samples (exact McNemar and a paired bootstrap, cr.results.accuracy): run the cr results compare command shown; it " +
      "needs both validations to have kept their per-sample correctness on the same samples, as the last column says."));
    var rows = jobs.map(function (u) {
      var run = top1Of([u]), delta = run && baseRun ? run.top1 - baseRun.top1 : null;
      var apart = run && baseRun && isNum(run.top1_lo) && isNum(baseRun.top1_hi) && isNum(run.top1_hi) && isNum(baseRun.top1_lo)
        ? (run.top1_lo > baseRun.top1_hi || run.top1_hi < baseRun.top1_lo) : null;
      return h("tr", { "data-job": u.id, "data-baseline": u === base ? "1" : null },
        h("td", null, settingText(u, shown), u === base ? h("span", { class: "sub" }, " (baseline)") : null),
        h("td", { class: "num" }, run ? fmtPct(run.top1) : DASH),
        h("td", { class: "num" }, run && isNum(run.top1_lo) ? fmtPct(run.top1_lo) + " \u2013 " + fmtPct(run.top1_hi) : DASH),
        h("td", { class: "num" }, run && isNum(run.samples) ? String(run.samples) : DASH),
        h("td", { class: "num", "data-delta": isNum(delta) ? delta : "" }, u === base || !isNum(delta) ? DASH : (delta >= 0 ? "+" : "") + (delta * 100).toFixed(2) + " points"),
        h("td", null, u === base || apart === null ? DASH : apart ? "intervals apart" : "intervals overlap"),
        h("td", null, badge(unitStatus(u))),
        h("td", { "data-paired": run && baseRun && u !== base ? pairing(baseRun, run) : null },
          run && baseRun && u !== base ? [h("code", null, "cr results compare " + baseRun.uid + " " + run.uid),
            h("div", { class: "sub" }, PAIRING[pairing(baseRun, run)])] : DASH));
    });
    sec.appendChild(h("div", { class: "table-wrap" }, h("table", { class: "board", id: "pipeline-table" },
      h("thead", null, h("tr", null, ["Variant", "Top-1", "95% interval", "Samples", "\u0394 to baseline", "Intervals", "Status", "Paired test"]
        .map(function (t) { return h("th", { scope: "col" }, t); }))), h("tbody", null, rows))));
    body.appendChild(sec);
  }

  // ---------------------------------------------------------------- the page
  function campaignRuns(all) {
    var rowOf = new Map();
    S.rows.forEach(function (r) { if (!rowOf.has(r.key)) rowOf.set(r.key, r); });
    var out = [];
    all.byKey.forEach(function (runs, key) {
      var row = rowOf.get(key) || {};
      runs.forEach(function (run) { if (run.campaign) out.push({ run: run, row: row }); });
    });
    return out;
  }

  function renderCampaign(main, name) {
    main.appendChild(h("h1", null, name ? "Campaign " + name : "Campaigns"));
    var body = h("div", { id: "campaign" }, h("p", { class: "note" }, "Loading\u2026"));
    main.appendChild(body);
    var token = S.token;
    track(loadRuns().then(function (all) {
      if (token !== S.token) return;
      clear(body);
      var items = campaignRuns(all);
      if (!name) {
        var counts = new Map();
        items.forEach(function (x) { counts.set(x.run.campaign, (counts.get(x.run.campaign) || 0) + 1); });
        if (!counts.size) { body.appendChild(h("p", { class: "note" }, "No result on this site comes from a campaign (cr campaign run).")); return; }
        body.appendChild(h("ul", null, Array.from(counts.keys()).sort().map(function (c) {
          return h("li", null, h("a", { href: campaignHref(c) }, c), " ", h("span", { class: "sub" }, counts.get(c) + " results"));
        })));
        return;
      }
      items = items.filter(function (x) { return x.run.campaign === name; });
      if (!items.length) { body.appendChild(h("p", { class: "error-box" }, "No result of campaign " + name + " on this site.")); return; }
      var jobs = units(items, function (run) { return run.campaign_job; });
      var v = matrix(body, name, jobs);
      pipelineStudy(body, jobs, v);
      C.hook.campaign = { name: name, jobs: jobs.length, columns: v.kept[0] || null, kept: v.kept,
                          follows: v.follows.map(function (f) { return f[0]; }) };
    }, function () { clear(body); body.appendChild(h("p", { class: "error-box" }, "data/runs.js did not load.")); }));
  }

  C.settings = { units: units, variedKeys: variedKeys, valueOf: valueOf, settingText: settingText, keyLabel: keyLabel,
                 compareKeys: compareKeys, unitStatus: unitStatus, parseSetting: parseSetting };
  C.view({ id: "campaign", nav: "Campaigns", render: renderCampaign,
           navWhen: function () { return S.rows.some(function (r) { return r.campaign; }); } });
})();
