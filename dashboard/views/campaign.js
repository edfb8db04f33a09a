/* reefkit results dashboard: the campaign view (#/campaign[/<name>]).
 *
 * #/campaign: every campaign on the site; #/campaign/<name>: its solutions x platforms
 * matrix, each cell the runs of that pair (status, p50, top-1, settings) linking to them.
 * Its link shows in the top bar when some leaderboard row comes from a campaign.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, h = C.h, clear = C.clear, track = C.track, DASH = C.DASH, isNum = C.isNum;
  var resultHref = C.resultHref, fmtDur = C.fmtDur, fmtPct = C.fmtPct, badge = C.badge, distinct = C.distinct, loadRuns = C.loadRuns;

  function campaignHref(name) { return "#/campaign/" + encodeURIComponent(name); }

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

  function campaignCell(items) {
    if (!items.length) return h("span", { class: "sub" }, DASH);
    var ok = items.filter(function (x) { return x.run.status === "ok"; }).length, failed = items.length - ok;
    var p50s = items.filter(function (x) { return x.run.action === "benchmark" && isNum(x.run.p50_ns); }).map(function (x) { return x.run.p50_ns; });
    var top1 = items.filter(function (x) { return isNum(x.run.top1); }).map(function (x) { return x.run.top1; })[0];
    return [
      h("div", null, badge(failed ? "failed" : "ok"), " ", h("span", { class: "sub" }, ok + " ok" + (failed ? ", " + failed + " failed" : ""))),
      p50s.length ? h("div", null, "p50 " + fmtDur(Math.min.apply(null, p50s))) : null,
      isNum(top1) ? h("div", null, "top-1 " + fmtPct(top1)) : null,
      h("div", { class: "sub" }, items.slice(0, 12).map(function (x) {
        return h("div", null, h("a", { href: resultHref(x.run.uid), title: x.run.error || x.run.uid },
          x.run.action + (x.run.config ? " " + x.run.config : "")), x.run.worker ? " on " + x.run.worker : "");
      }), items.length > 12 ? h("div", null, "+" + (items.length - 12) + " more") : null)
    ];
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
      var subjects = distinct(items, function (x) { return x.row.subject || "?"; }).sort();
      var platforms = distinct(items, function (x) { return x.row.platform || "?"; });
      var label = new Map();
      items.forEach(function (x) { label.set(x.row.platform || "?", x.row.platform_label || x.row.platform || "?"); });
      platforms.sort(function (a, b) { return label.get(a) < label.get(b) ? -1 : 1; });
      var failed = items.filter(function (x) { return x.run.status !== "ok"; }).length;
      body.appendChild(h("p", { class: "note" }, items.length + " results, " + failed + " failed, on " + platforms.length + " platforms"));
      var table = h("table", { class: "board", "data-campaign": name },
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "Solution"), platforms.map(function (p) { return h("th", { scope: "col" }, label.get(p)); }))),
        h("tbody", null, subjects.map(function (sub) {
          return h("tr", null, h("th", { scope: "row" }, sub), platforms.map(function (p) {
            return h("td", { "data-platform": p }, campaignCell(items.filter(function (x) { return (x.row.subject || "?") === sub && (x.row.platform || "?") === p; })));
          }));
        })));
      body.appendChild(h("div", { class: "table-wrap" }, table));
    }, function () { clear(body); body.appendChild(h("p", { class: "error-box" }, "data/runs.js did not load.")); }));
  }

  C.view({ id: "campaign", nav: "Campaigns", render: renderCampaign,
           navWhen: function () { return S.rows.some(function (r) { return r.campaign; }); } });
})();
