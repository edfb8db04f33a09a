"""cr gate --ab: interleaved A/B runs of two solutions' declared benchmark, each side's
rounds pooled into one side of the gate (cr.results.gate, which judges them).

    baseline, candidate = run_ab("lenet-digits-onnxruntime", "lenet-digits-torch", rounds=4)
    report = cr.results.gate.evaluate(baseline, candidate, threshold=0.05)
"""
from __future__ import annotations

from ..results.gate import GateError, Side, pool


def solution_ref(ref: str) -> str:
    """'lenet-digits-onnxruntime' as 'solution:lenet-digits-onnxruntime' (a kind given is kept)."""
    return ref if ":" in ref.split("@", 1)[0] else f"solution:{ref}"


def declared_benchmark(ref: str, scenario: str | None) -> dict:
    """The params of the solution's declared benchmark (the first, or the first of scenario)."""
    from ..store.catalog import show

    target = show(solution_ref(ref), verify=False)
    if target["kind"] != "solution":
        raise GateError(f"--ab {ref}: {target['ref']} is a {target['kind']}, not a solution",
                        hint="--ab takes two solutions (cr find solution lists them)")
    acts = [a.get("params") or {} for a in target["meta"].get("actions") or [] if a.get("action") == "benchmark"]
    chosen = [p for p in acts if scenario is None or p.get("scenario") == scenario]
    if not chosen:
        have = ", ".join(sorted({str(p.get("scenario")) for p in acts})) or "none"
        raise GateError(f"--ab {ref}: {target['ref']} declares no benchmark" + (f" of scenario {scenario}" if scenario else ""),
                        hint=f"its declared benchmark scenarios: {have}")
    return dict(chosen[0])


def run_ab(ref_a: str, ref_b: str, rounds: int, params: dict | None = None, scenario: str | None = None,
           lock_a=None, lock_b=None, store: bool = True) -> tuple[Side, Side]:
    """Interleaved A/B runs: the declared benchmark of solution A, then B's, rounds times
    (A, B, A, B, ...: a drift of the machine falls on both sides alike), each side's
    samples pooled in time order. params (queries, duration) are laid over the declared
    benchmark's; lock_a / lock_b: a lock file to run that side in (two software versions of
    one solution). A failed run is a GateError naming it."""
    from ..events import reporter
    from .actions import benchmark

    if rounds < 1:
        raise GateError(f"--rounds {rounds}: at least 1", hint="4 rounds of each side are a good start")
    sides = {"A": (solution_ref(ref_a), lock_a), "B": (solution_ref(ref_b), lock_b)}
    chosen = {name: {**declared_benchmark(ref, scenario), **(params or {})} for name, (ref, _) in sides.items()}
    done = {"A": ([], []), "B": ([], [])}
    for i in range(rounds):
        for name, (ref, lock) in sides.items():
            reporter().progress("gate A/B rounds", 2 * i + (name == "B"), 2 * rounds, "runs")
            record = benchmark(ref, params=chosen[name], lock=lock, store=store)
            if record.get("status") != "ok":
                error = record.get("error") or {}
                raise GateError(f"--ab: round {i + 1} of {name} ({ref}) failed: {error.get('message')}",
                                hint=error.get("hint") or "cr results show UID says more")
            done[name][0].append(record)
            done[name][1].append((record.get("raw") or {}).get("latencies_ns"))
    reporter().progress("gate A/B rounds", 2 * rounds, 2 * rounds, "runs")
    out = []
    for name, (ref, lock) in sides.items():
        records, lats = done[name]
        if any(lat is None for lat in lats):
            raise GateError(f"--ab: a run of {ref} returned no raw latencies", hint="this is a bug in cr: report it")
        words = f"A/B side {name}: {ref}" + (f" in lock {lock}" if lock else "") + f", {rounds} interleaved round(s)"
        out.append(pool(records, lats, words))
    return out[0], out[1]
