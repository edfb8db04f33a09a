/* reefkit results dashboard: detection figures (after leaderboard.js and pareto.js).
 *
 * Detection validations carry COCO AP@[.5:.95] and AP50 (pycocotools, cr.runtime.coco_eval):
 * two leaderboard columns after Top-1, shown when some row has them, and a Pareto plot of
 * p50 latency against AP50 (one frontier per task, dataset and platform, like the top-1
 * plots). Not a view of its own: entries in the leaderboard's and the Pareto plot's tables.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, isNum = C.isNum, fmtPct = C.fmtPct;

  C.columns.add({ id: "ap", label: "AP", num: true, desc: true, fmt: fmtPct, optional: true,
                  title: "detection: COCO AP averaged over IoU 0.50:0.95 (pycocotools)" }, { after: "top1" });
  C.columns.add({ id: "ap50", label: "AP50", num: true, desc: true, fmt: fmtPct, optional: true,
                  title: "detection: COCO AP at IoU 0.5" }, { after: "ap" });

  C.measures.ap50 = { title: "AP50 (%, detection)", better: 1, log: false, percent: true, what: "an AP50", word: "more accurate",
                      get: function (r) { return isNum(r.ap50) && isNum(r.ap50 * 100) ? r.ap50 * 100 : null; } };
  C.plots.add({ id: "latency-ap50", label: "p50 latency vs AP50 (detection)", x: "p50", y: "ap50", accuracy: true },
              { after: "throughput" });
})();
