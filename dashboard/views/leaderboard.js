/* reefkit results dashboard: the leaderboard view (#/leaderboard).
 *
 * One row per configuration, its columns a table (C.columns) that other scripts extend
 * (detection.js adds AP and AP50 after Top-1): {id: the row's column name in data/index.js,
 * label, num, desc (sorts high first), fmt(value) or cell(row) -> nodes, sortValue(row),
 * optional (shown only when some row has a number), title}.
 *
 * First view: rows with figures come first, and rows that failed or have no figure at all
 * (every number column blank: a `cr run` record, a failed benchmark) are behind a toggle
 * that says how many there are ("3 failed or without figures: show"). The table scrolls
 * inside its own box with the model column pinned (style.css), so a laptop's 1366 px never
 * cuts its last columns off the page.
 */
(function () {
  "use strict";

  var C = window.CR_SITE, S = C.S, hook = C.hook, h = C.h, clear = C.clear, arr = C.arr, isNum = C.isNum, DASH = C.DASH;
  var short = C.short, resultHref = C.resultHref, compareHref = C.compareHref, filteredRows = C.filteredRows, filterBar = C.filterBar;
  var fmtPct = C.fmtPct, fmtDur = C.fmtDur, fmtRate = C.fmtRate, fmtBytes = C.fmtBytes, fmtEnergy = C.fmtEnergy;
  var fmtInt = C.fmtInt, fmtDate = C.fmtDate;

  // ---------------------------------------------------------------- leaderboard
  function statusCell(r) {
    var parts = [];
    if (r.outcome) parts.push(h("span", { class: "badge status-" + r.outcome, title: "validation" }, r.outcome));
    if (r.validity) parts.push(" ", h("span", { class: "badge status-" + r.validity, title: "benchmark validity" }, r.validity));
    if (r.bench_status === "failed" || r.validate_status === "failed") parts.push(" ", h("span", { class: "badge status-failed" }, "failed"));
    if (r.reproduction) parts.push(" ", h("span", { class: "tag", title: "reproduction" }, "reproduction: " + r.reproduction));
    if (r.error) parts.push(h("div", { class: "sub status-failed", title: r.error }, short(r.error, 90)));
    return parts;
  }

  var COLUMNS = C.columns = new C.Table();
  [
    { id: "name", label: "Model / solution", sortValue: function (r) { return r.name + "\u0000" + r.version; },
      cell: function (r) {
        var uid = r.bench_uid || r.validate_uid || r.other_uid;
        var links = [];
        if (r.bench_uid) links.push(h("a", { href: resultHref(r.bench_uid) }, "benchmark"));
        if (r.validate_uid) links.push(links.length ? " \u00B7 " : "", h("a", { href: resultHref(r.validate_uid) }, "validation"));
        if (r.other_uid) links.push(h("a", { href: resultHref(r.other_uid) }, r.other_action || "result"));
        var name = uid ? h("a", { href: resultHref(uid), class: "subject" }, r.name) : h("span", { class: "subject" }, r.name);
        return [name, " ", h("span", { class: "sub" }, r.version),
                r.kind === "solution" ? h("span", { class: "tag" }, "solution") : null,
                arr(r.tags).length ? h("div", null, arr(r.tags).map(function (t) { return h("span", { class: "tag" }, t); })) : null,
                h("div", { class: "sub" }, links)];
      } },
    { id: "task", label: "Task", title: "the model's task; below it the dataset of the accuracy figure (else of the benchmark's inputs)",
      cell: function (r) { return [r.task || DASH, r.dataset ? h("div", { class: "sub", "data-part": "dataset" }, r.dataset) : null]; } },
    { id: "backend", label: "Backend", cell: function (r) { return [r.backend, " ", h("span", { class: "sub" }, r.backend_version)]; } },
    { id: "variant", label: "Variant" },
    { id: "precision", label: "Precision" },
    { id: "platform_label", label: "Platform", cell: function (r) { return emulatedPlatformCell(r); } },
    { id: "scenario", label: "Scenario, config", sortValue: function (r) { return r.scenario + "\u0000" + r.config; },
      title: "the benchmark scenario; below it the run's configuration beyond the other columns (threads, batch size, engine, inputs, backend options; defaults left out)",
      cell: function (r) {
        return [r.scenario || DASH, r.config ? h("div", { class: "config mono", "data-part": "config", title: r.config }, short(r.config, 80)) : null];
      } },
    { id: "top1", label: "Top-1", num: true, desc: true, fmt: fmtPct },
    { id: "p50_ns", label: "p50", num: true, fmt: fmtDur },
    { id: "p99_ns", label: "p99", num: true, fmt: fmtDur },
    { id: "throughput", label: "Throughput", num: true, desc: true, fmt: fmtRate, title: "samples per second" },
    { id: "peak_rss", label: "Peak memory", num: true, fmt: fmtBytes, title: "peak resident set size of the benchmark process" },
    { id: "energy_j", label: "Energy", num: true, fmt: fmtEnergy, title: "joules per sample", optional: true },
    { id: "runs", label: "Runs", num: true, desc: true, fmt: fmtInt },
    { id: "latest", label: "Latest", desc: true, fmt: fmtDate },
    { id: "status", label: "Status", sortValue: function (r) { return r.error ? 0 : 1; }, cell: statusCell }
  ].forEach(function (c) { COLUMNS.add(c); });

  // -- emulated platforms (QEMU user-mode roots): the label says so, a tag makes it plain --
  var EMULATED_LABEL = / \[emulated: ([^\]]*)\]$/;
  function emulatedPlatformCell(r) {
    var label = r.platform_label || "", m = EMULATED_LABEL.exec(label);
    if (!m) return label;
    return [label.slice(0, m.index), " ", h("span", { class: "tag", "data-part": "emulated",
      title: "emulated (" + m[1] + "): its figures say how fast the emulator runs the code, not how fast the board is" }, "emulated")];
  }

  // Number columns that count as figures (the run count and the date are no measurement).
  var NOT_FIGURES = { runs: 1, latest: 1 };
  function figureColumns() {
    return COLUMNS.all().filter(function (c) { return c.num && !NOT_FIGURES[c.id]; });
  }
  // A row behind the toggle: one that failed, or one with no figure in any number column.
  // Kept on the row (rows never change), so sorting and filtering again costs a property read.
  function isHidden(r, figures) {
    if (r._hidden === undefined) {
      var hidden = !!r.error || r.bench_status === "failed" || r.validate_status === "failed";
      if (!hidden) {
        hidden = true;
        for (var i = 0; i < figures.length; i++) if (isNum(r[figures[i].id])) { hidden = false; break; }
      }
      r._hidden = hidden;
    }
    return r._hidden;
  }
  // The filtered, sorted rows split in two (order kept within each): those with figures, and
  // the failed or figure-less ones, which follow when shown.
  var split = { source: null, shown: null, hidden: null };
  function splitRows(rows) {
    if (split.source !== rows) {
      var figures = figureColumns(), shown = [], hidden = [];
      rows.forEach(function (r) { (isHidden(r, figures) ? hidden : shown).push(r); });
      split = { source: rows, shown: shown, hidden: hidden };
    }
    return split;
  }
  C.leaderboardSplit = splitRows;

  function visibleColumns() {
    return COLUMNS.all().filter(function (c) {
      return !c.optional || S.rows.some(function (r) { return isNum(r[c.id]); });
    });
  }

  function renderLeaderboard(main) {
    var columns = visibleColumns();
    var headRow = h("tr", null, h("th", { scope: "col", title: "select to compare" }, ""));
    var compareButton = h("button", { type: "button", class: "primary", "data-action": "compare", disabled: true,
      on: { click: function () { location.hash = compareHref(selectedUids()); } } }, "Compare selected");
    var selectionNote = h("span", { class: "sub" });
    var tbody = h("tbody");
    var table = h("table", { class: "board", id: "leaderboard" }, h("thead", null, headRow), tbody);
    var pager = h("div", { class: "pager", "data-pager": "bottom" });
    var topPager = h("div", { class: "pager", "data-pager": "top" });
    var hiddenToggle = h("button", { type: "button", "data-action": "toggle-hidden", "aria-pressed": "false",
      on: { click: function () { S.showHidden = !S.showHidden; S.page = 0; refresh(); } } });
    var hiddenNote = h("span", { class: "sub", "data-part": "hidden-note" });

    columns.forEach(function (c) {
      var th = h("th", { scope: "col", class: "sortable" + (c.num ? " num" : ""), "data-col": c.id, title: c.title || null,
        on: { click: function () {
          if (S.sort.col === c.id) S.sort.dir = -S.sort.dir;
          else { S.sort.col = c.id; S.sort.dir = c.desc ? -1 : 1; }
          S.page = 0; refresh();
        } } }, c.label);
      headRow.appendChild(th);
    });

    function selectedUids() {
      return S.rows.filter(function (r) { return S.selected.has(r.i); })
        .map(function (r) { return r.bench_uid || r.validate_uid || r.other_uid; }).filter(Boolean);
    }
    function updateSelection() {
      var n = S.selected.size;
      compareButton.disabled = n < 2;
      compareButton.textContent = "Compare selected (" + n + ")";
      selectionNote.textContent = n < 2 ? "select two or more rows to compare" : "";
    }

    function refresh() {
      var parts = splitRows(filteredRows());
      var rows = S.showHidden ? parts.shown.concat(parts.hidden) : parts.shown;
      var nHidden = parts.hidden.length;
      hiddenToggle.textContent = fmtInt(nHidden) + " failed or without figures: " + (S.showHidden ? "hide" : "show");
      hiddenToggle.setAttribute("aria-pressed", S.showHidden ? "true" : "false");
      hiddenToggle.disabled = nHidden === 0;
      hiddenNote.textContent = nHidden === 0 ? "" : S.showHidden ? "listed after the rows with figures"
        : "(failed runs, and runs such as cr run that measure nothing)";
      var pages = Math.max(1, Math.ceil(rows.length / S.pageSize));
      S.page = Math.min(S.page, pages - 1);
      var start = S.page * S.pageSize, shown = rows.slice(start, start + S.pageSize);
      headRow.querySelectorAll("th[data-col]").forEach(function (th) {
        var col = th.getAttribute("data-col");
        if (col === S.sort.col) th.setAttribute("aria-sort", S.sort.dir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
      var body = document.createDocumentFragment();
      shown.forEach(function (r) {
        var box = h("input", { type: "checkbox", "aria-label": "select for comparison", checked: S.selected.has(r.i),
          on: { change: function () { if (box.checked) S.selected.add(r.i); else S.selected.delete(r.i); updateSelection(); } } });
        var tr = h("tr", { "data-row": r.i }, h("td", null, box));
        columns.forEach(function (c) {
          var content = c.cell ? c.cell(r) : (c.fmt ? c.fmt(r[c.id]) : (r[c.id] || DASH));
          tr.appendChild(h("td", { class: c.num ? "num" : null, "data-col": c.id,
            "data-value": c.num && isNum(r[c.id]) ? r[c.id] : null }, content));
        });
        body.appendChild(tr);
      });
      clear(tbody);
      tbody.appendChild(body);
      if (!rows.length) {
        tbody.appendChild(h("tr", null, h("td", { colspan: columns.length + 1, class: "note" },
          !S.rows.length ? "No results yet." : nHidden ? "No row with figures matches: " + fmtInt(nHidden) +
            " failed or without figures are hidden." : "No row matches the filters.")));
      }
      table.setAttribute("data-total", rows.length);
      hook.rowsTotal = S.rows.length;
      hook.rowsFiltered = rows.length;
      hook.rowsHidden = S.showHidden ? 0 : nHidden;
      hook.rowsShown = shown.length;
      fillPager(pager, rows, start, shown, pages);
      fillPager(topPager, rows, start, shown, pages);
      if (hook.firstRowsAt === null && shown.length) hook.firstRowsAt = performance.now();
    }

    function fillPager(pager, rows, start, shown, pages) {
      clear(pager);
      pager.appendChild(h("span", { "data-pager": "range" }, rows.length
        ? "Rows " + fmtInt(start + 1) + "\u2013" + fmtInt(start + shown.length) + " of " + fmtInt(rows.length) +
          (split.source.length !== S.rows.length ? " (filtered from " + fmtInt(S.rows.length) + ")" : "")
        : "0 rows"));
      pager.appendChild(h("button", { type: "button", "data-action": "prev", disabled: S.page === 0,
        on: { click: function () { S.page--; refresh(); } } }, "\u2039 Previous"));
      pager.appendChild(h("span", null, "page " + (S.page + 1) + " of " + pages));
      pager.appendChild(h("button", { type: "button", "data-action": "next", disabled: S.page >= pages - 1,
        on: { click: function () { S.page++; refresh(); } } }, "Next \u203A"));
      var size = h("select", { "aria-label": "rows per page", on: { change: function () {
        S.pageSize = parseInt(size.value, 10); S.page = 0; refresh(); } } },
        [50, 100, 500].map(function (n) { return h("option", { value: n, text: n + " per page" }); }));
      size.value = String(S.pageSize);
      pager.appendChild(size);
    }

    main.appendChild(h("h1", null, "Leaderboard"));
    main.appendChild(h("p", { class: "note" }, "One row per model or solution, backend, variant, precision, platform, " +
      "scenario and run configuration (Config: threads, batch size, engine, inputs, backend options): the latest benchmark " +
      "joined with the latest validation of the same configuration and dataset; rows with figures first. Click a column to sort."));
    main.appendChild(filterBar(refresh));
    main.appendChild(h("div", { class: "toolbar" }, compareButton, selectionNote, hiddenToggle, hiddenNote));
    main.appendChild(topPager);
    main.appendChild(h("div", { class: "table-wrap" }, table));
    main.appendChild(pager);
    updateSelection();
    refresh();
  }


  C.view({ id: "leaderboard", nav: "Leaderboard", render: renderLeaderboard });
})();
