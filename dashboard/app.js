/* reefkit results dashboard: routing and start (the last script index.html loads).
 *
 * The site is classic scripts (ES modules do not load from file:// in Chromium), no build
 * step, loaded in a fixed order by index.html: lib/core.js (namespace window.CR_SITE,
 * state, tables, DOM and formatting), lib/data.js (data files, rows, filters),
 * lib/charts.js, then one script per view under views/, each registering itself in the
 * table of views (C.view({id, render, nav})) or adding entries to another view's tables
 * (columns, plots, page sections), then this file. See dashboard/README.md: adding a view.
 *
 * Routes: "#/<view id>[/<argument>]", today #/leaderboard, #/pareto, #/result/<uid>,
 * #/compare/<uid>,<uid>[,...], #/campaign[/<name>], #/study[/<name>]; an empty hash is the leaderboard.
 * Test hook: window.CR_DASHBOARD (ready, view, rowsTotal, rowsShown, rowsHidden (behind the toggle), paretoPoints, pareto, campaign, study, errors).
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, hook = C.hook, h = C.h, clear = C.clear, fmtInt = C.fmtInt, fmtDate = C.fmtDate;

  function parseHash() {
    var hash = location.hash.replace(/^#\/?/, "");
    var slash = hash.indexOf("/");
    var view = slash < 0 ? hash : hash.slice(0, slash), arg = slash < 0 ? "" : hash.slice(slash + 1);
    try { arg = decodeURIComponent(arg); } catch (e) { arg = ""; }
    return { view: view || "leaderboard", arg: arg };
  }

  function render() {
    S.token++;
    C.destroyCharts();
    var r = parseHash(), main = document.getElementById("main"), view = C.views.get(r.view);
    clear(main);
    main.removeAttribute("data-result");
    document.body.setAttribute("data-view", r.view);
    document.title = "reefkit results";
    document.querySelectorAll("[data-nav]").forEach(function (a) {
      a.classList.toggle("active", a.getAttribute("data-nav") === r.view);
    });
    if (!S.index) {
      main.appendChild(h("h1", null, "No data"));
      main.appendChild(h("p", { class: "error-box" }, "data/index.js is missing: this folder holds the dashboard's sources, not a built site. " +
        "Run `cr dashboard build` and open the index.html it writes (cr dashboard open)."));
    } else if (view) view.render(main, r.arg);
    else {
      main.appendChild(h("h1", null, "Page not found"));
      main.appendChild(h("p", null, h("a", { href: "#/leaderboard" }, "Go to the leaderboard")));
    }
    hook.view = r.view;
    hook.renders++;
  }

  // One link in the top bar per view that has a nav text (and whose navWhen() agrees), in
  // the order the views registered.
  function addNav() {
    var nav = document.querySelector(".top nav");
    if (!nav) return;
    C.views.all().forEach(function (v) {
      if (!v.nav || nav.querySelector("[data-nav=\"" + v.id + "\"]") || (v.navWhen && !v.navWhen())) return;
      nav.appendChild(h("a", { href: "#/" + v.id, "data-nav": v.id }, v.nav));
    });
  }

  function boot() {
    var data = window.CR_DATA_INDEX;
    hook.timings = { dataLoaded: performance.now() };  // ms since navigation start: data/index.js has run
    if (data) {
      S.index = data;
      S.strings = data.strings;
      S.rows = C.decode(data, data.strings);
      hook.timings.decoded = performance.now();
      var c = data.counts || {};
      document.getElementById("summary").textContent = fmtInt(c.results) + " results \u00B7 " + fmtInt(c.rows) +
        " leaderboard rows \u00B7 newest " + fmtDate(data.generated);
    }
    addNav();
    window.addEventListener("hashchange", render);
    render();
    hook.timings.rendered = performance.now();
    hook.ready = true;
  }

  boot();
})();
