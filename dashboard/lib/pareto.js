/* reefkit results dashboard: the Pareto rule (after charts.js).
 *
 * The same rule as cr/results/pareto.py (analyse), line for line, so that the site never
 * says a point is on the front where `cr results pareto` or `cr tune` says it is not
 * (tests/test_dashboard_study.py runs both on the same random points):
 *   - a point beats another on an objective when their 95% intervals do not overlap and the
 *     difference exceeds MIN_EFFECT (1%) of the other's value (two figures without
 *     intervals: their values decide);
 *   - A dominates B when A beats B on at least one objective and B beats A on none;
 *   - the front: the feasible points no feasible point dominates;
 *   - among the front, ranked by the first objective (then the next, then the id), a point
 *     that neither beats nor is beaten by a better-ranked "front" point on any objective is
 *     "tied" with it (tied_with: their ids); the others are "front";
 *   - feasible === false: "infeasible"; a point lacking an objective: "unmeasured".
 * points: [{id, values: {name: {value, lo, hi}}, feasible?}]; objectives: [{name, better: "lower"|"higher"}].
 */
(function () {
  "use strict";

  var C = window.CR_SITE, isNum = C.isNum;
  var MIN_EFFECT = 0.01;
  var RULE = "a point beats another on an objective when their 95% intervals do not overlap and the difference " +
    "exceeds 1% of the other's value; it dominates it when it beats it on at least one objective and is beaten on " +
    "none; the front is every feasible point no feasible point dominates; a front point that neither beats nor is " +
    "beaten by a better-ranked front point (ranked by the objectives in order) on any objective is tied with it";

  function beats(a, b, obj, minEffect) {
    var exact = a.hi === a.lo && b.hi === b.lo, apart;
    if (obj.better === "lower") apart = a.hi < b.lo || (exact && a.value < b.value);
    else apart = a.lo > b.hi || (exact && a.value > b.value);
    return apart && Math.abs(a.value - b.value) > minEffect * Math.abs(b.value);
  }

  function dominates(a, b, objectives, minEffect) {
    var won = false;
    for (var i = 0; i < objectives.length; i++) {
      var o = objectives[i], x = a.values[o.name], y = b.values[o.name];
      if (!x || !y) return false;
      if (beats(y, x, o, minEffect)) return false;
      won = won || beats(x, y, o, minEffect);
    }
    return won;
  }

  // Python's sort key (values, lower-is-better first, then str(id)); ids compared as strings
  function compareRank(objectives) {
    return function (p, q) {
      for (var i = 0; i < objectives.length; i++) {
        var o = objectives[i], sign = o.better === "lower" ? 1 : -1;
        var a = sign * p.values[o.name].value, b = sign * q.values[o.name].value;
        if (a < b) return -1;
        if (a > b) return 1;
      }
      var x = String(p.id), y = String(q.id);
      return x < y ? -1 : x > y ? 1 : 0;
    };
  }

  function analyse(points, objectives, minEffect) {
    minEffect = isNum(minEffect) ? minEffect : MIN_EFFECT;
    var out = points.map(function (p) { return Object.assign({}, p, { status: null, tied_with: [], dominated_by: null }); });
    var live = [];
    out.forEach(function (p) {
      var values = p.values && typeof p.values === "object" ? p.values : {};
      if (objectives.some(function (o) { var v = values[o.name]; return !v || !isNum(v.value) || !isNum(v.lo) || !isNum(v.hi); })) p.status = "unmeasured";
      else if (p.feasible === false) p.status = "infeasible";
      else live.push(p);
    });
    live.sort(compareRank(objectives));
    live.forEach(function (p) {
      for (var i = 0; i < live.length; i++) {
        var q = live[i];
        if (q !== p && dominates(q, p, objectives, minEffect)) { p.status = "dominated"; p.dominated_by = q.id; break; }
      }
    });
    var front = live.filter(function (p) { return p.status === null; }), reps = [];
    front.forEach(function (p) {
      var ties = reps.filter(function (r) {
        return !objectives.some(function (o) {
          return beats(p.values[o.name], r.values[o.name], o, minEffect) || beats(r.values[o.name], p.values[o.name], o, minEffect);
        });
      }).map(function (r) { return r.id; });
      if (ties.length) { p.status = "tied"; p.tied_with = ties; }
      else { p.status = "front"; reps.push(p); }
    });
    return { rule: RULE, objectives: objectives.map(function (o) { return o.name; }), min_effect: minEffect,
             front: front.map(function (p) { return p.id; }), points: out };
  }

  // A row's (or run's) figure with its 95% interval, in the row's units (ns, samples/s, a
  // fraction); the interval is the value itself when the row has none (memory, AP).
  function figure(r, value, lo, hi) {
    if (!isNum(value)) return null;
    lo = isNum(lo) ? Math.min(lo, value) : value;
    hi = isNum(hi) ? Math.max(hi, value) : value;
    return { value: value, lo: lo, hi: hi };
  }

  C.pareto = { analyse: analyse, beats: beats, dominates: dominates, figure: figure, RULE: RULE, MIN_EFFECT: MIN_EFFECT };
})();
