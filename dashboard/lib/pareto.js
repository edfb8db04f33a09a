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

  // analyse() works on the live points' figures laid out in typed arrays, every objective
  // turned into one to lower (a higher-is-better figure negated, its interval's ends
  // swapped: exact in floating point, so every comparison is the one beats() makes): a
  // group of 25,000 points takes a tenth of the time objects and closures took.
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
    var n = live.length, k = objectives.length, m = minEffect;
    var V = new Float64Array(n * k), LO = new Float64Array(n * k), HI = new Float64Array(n * k), EX = new Uint8Array(n * k);
    live.forEach(function (p, i) {
      objectives.forEach(function (o, j) {
        var f = p.values[o.name], at = i * k + j;
        EX[at] = f.hi === f.lo ? 1 : 0;
        if (o.better === "lower") { V[at] = f.value; LO[at] = f.lo; HI[at] = f.hi; }
        else { V[at] = -f.value; LO[at] = -f.hi; HI[at] = -f.lo; }
      });
    });
    // a beats b on objective j (a, b: positions of live points)
    function beatsAt(a, b, j) {
      var x = a * k + j, y = b * k + j, va = V[x], vb = V[y];
      if (!(HI[x] < LO[y] || (EX[x] === 1 && EX[y] === 1 && va < vb))) return false;
      return Math.abs(va - vb) > m * Math.abs(vb);
    }
    // Each point's first dominator in rank order, as analyse() looks for it. With two
    // objectives and every value inside its interval (as measure() makes them), only some
    // points can dominate point i, and a tree over the rank order finds them without
    // visiting the others: before i, those i does not beat on the second objective (a
    // dominator is never beaten); after i (no better first value, so no win there), those
    // that beat i on the second objective, whose interval must then end below i's. "Does
    // not beat": q's interval reaches i's (LO_q <= HI_i) or q is within the minimum effect
    // (V_q <= T_i, with a margin far above rounding). Each point found is checked exactly;
    // the points skipped are ones the full scan would have rejected.
    var dominatedBy = new Int32Array(n).fill(-1);
    var inside = k === 2;
    for (var c = 0; c < n * k && inside; c++) inside = LO[c] <= V[c] && V[c] <= HI[c];
    function dominator(i, q) {
      var won = false;
      for (var j = 0; j < k; j++) {
        if (beatsAt(i, q, j)) return false;
        if (!won && beatsAt(q, i, j)) won = true;
      }
      return won;
    }
    if (!inside) {
      for (var i0 = 0; i0 < n; i0++) {
        for (var q0 = 0; q0 < n; q0++) if (q0 !== i0 && dominator(i0, q0)) { dominatedBy[i0] = q0; break; }
      }
    } else {
      var size = 1;
      while (size < n) size *= 2;
      var TLO = new Float64Array(2 * size).fill(Infinity), TV = new Float64Array(2 * size).fill(Infinity), THI = new Float64Array(2 * size).fill(Infinity);
      for (var t = 0; t < n; t++) { TLO[size + t] = LO[t * 2 + 1]; TV[size + t] = V[t * 2 + 1]; THI[size + t] = HI[t * 2 + 1]; }
      for (var u = size - 1; u >= 1; u--) {
        TLO[u] = Math.min(TLO[2 * u], TLO[2 * u + 1]); TV[u] = Math.min(TV[2 * u], TV[2 * u + 1]); THI[u] = Math.min(THI[2 * u], THI[2 * u + 1]);
      }
      var qFrom, qTo, hiI, tI, loI;
      var keepBefore = function (node) { return TLO[node] <= hiI || TV[node] <= tI; };
      var keepAfter = function (node) { return THI[node] < loI; };
      var next = function (node, l, r, keep) {  // the first position in [qFrom, qTo) within [l, r) that keep() keeps, or -1
        if (r <= qFrom || l >= qTo || !keep(node)) return -1;
        if (r - l === 1) return l;
        var mid = (l + r) >> 1, found = next(2 * node, l, mid, keep);
        return found >= 0 ? found : next(2 * node + 1, mid, r, keep);
      };
      // points with the same figures have the same dominators (and never dominate each other)
      var twins = new Map();
      for (var i = 0; i < n; i++) {
        var key = V[i * 2] + " " + LO[i * 2] + " " + HI[i * 2] + " " + V[i * 2 + 1] + " " + LO[i * 2 + 1] + " " + HI[i * 2 + 1];
        if (twins.has(key)) { dominatedBy[i] = dominatedBy[twins.get(key)]; continue; }
        twins.set(key, i);
        var vi = V[i * 2 + 1];
        hiI = HI[i * 2 + 1];
        loI = LO[i * 2 + 1];
        tI = m < 0.5 ? Math.max(vi, vi / (1 - m), vi / (1 + m)) : Infinity;
        tI += 1e-9 * Math.abs(tI) + 1e-300;
        var found = -1;
        for (qFrom = 0, qTo = i; found < 0; qFrom = q + 1) {
          var q = next(1, 0, size, keepBefore);
          if (q < 0) break;
          if (dominator(i, q)) found = q;
        }
        for (qFrom = i + 1, qTo = n; found < 0; qFrom = q2 + 1) {
          var q2 = next(1, 0, size, keepAfter);
          if (q2 < 0) break;
          if (dominator(i, q2)) found = q2;
        }
        dominatedBy[i] = found;
      }
    }
    var reps = [], front = [];
    for (var f = 0; f < n; f++) {
      var p = live[f];
      if (dominatedBy[f] >= 0) { p.status = "dominated"; p.dominated_by = live[dominatedBy[f]].id; continue; }
      front.push(p);
      var ties = [];
      for (var r = 0; r < reps.length; r++) {
        var apart = false;
        for (var o = 0; o < k && !apart; o++) apart = beatsAt(f, reps[r], o) || beatsAt(reps[r], f, o);
        if (!apart) ties.push(live[reps[r]].id);
      }
      if (ties.length) { p.status = "tied"; p.tied_with = ties; }
      else { p.status = "front"; reps.push(f); }
    }
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
