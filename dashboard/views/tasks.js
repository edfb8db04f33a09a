/* reefkit results dashboard: segmentation, landmarks and regression figures (after detection.js).
 *
 * Their validations carry mIoU and pixel accuracy (segmentation), NME or the mean error in
 * the model's units (landmarks), MAE and RMSE (regression) (cr.runtime.tasks, docs/tasks.md):
 * leaderboard columns after AP50, each shown when some row has it. Errors sort low first.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, fmtPct = C.fmtPct, fmtAny = C.fmtAny;

  C.columns.add({ id: "miou", label: "mIoU", num: true, desc: true, fmt: fmtPct, optional: true,
                  title: "segmentation: mean over classes of intersection over union" }, { after: "ap50" });
  C.columns.add({ id: "pixel_accuracy", label: "Pixel acc.", num: true, desc: true, fmt: fmtPct, optional: true,
                  title: "segmentation: share of pixels of the right class" }, { after: "miou" });
  C.columns.add({ id: "nme", label: "NME", num: true, fmt: fmtAny, optional: true,
                  title: "landmarks: mean point error over the declared normalising distance (lower is better)" },
                { after: "pixel_accuracy" });
  C.columns.add({ id: "mean_error", label: "Mean error", num: true, fmt: fmtAny, optional: true,
                  title: "landmarks: mean point error in the model's units (lower is better)" }, { after: "nme" });
  C.columns.add({ id: "mae", label: "MAE", num: true, fmt: fmtAny, optional: true,
                  title: "regression: mean absolute error (lower is better)" }, { after: "mean_error" });
  C.columns.add({ id: "rmse", label: "RMSE", num: true, fmt: fmtAny, optional: true,
                  title: "regression: root mean squared error (lower is better)" }, { after: "mae" });
})();
