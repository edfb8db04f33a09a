"""Benchmarks for detection and resolution (printed as ratios against `python -c pass`).

    python benchmarks/bench_resolve.py [--runs 15] [--graph 300] [--json FILE]

1. `cr detect` of every shipped recipe on this machine (target <= 1 s wall).
2. `cr resolve` of a solution whose software is all present, lock cache hit
   (target <= 0.15 s wall).
3. The resolver alone (in process) on a synthetic graph of N software with version
   ranges: time to a lock, and time to the explanation of one deep conflict.

Everything runs in a temporary CR_HOME that is removed at the end. Subprocesses use the
interpreter running this script; bytecode is written (as in an installed reefkit).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return elapsed


def medians(commands: dict[str, list[str]], env: dict, runs: int) -> dict[str, list[float]]:
    """Interleaved runs so that machine noise hits every command alike."""
    samples: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        order = list(commands.items())
        random.shuffle(order)
        for key, cmd in order:
            samples[key].append(timed(cmd, env))
    return samples


def write_solution(home: Path) -> None:
    repo = home / "benchrepo"
    (repo / "solution" / "all-present" / "1.0.0").mkdir(parents=True)
    (repo / "cr-repo.json").write_text(json.dumps({"name": "benchrepo", "uid": secrets.token_hex(8), "version": "1.0.0"}))
    meta = {"uid": secrets.token_hex(8), "kind": "solution", "name": "all-present", "version": "1.0.0",
            "deps": ["software:python@>=3.9", "software:pip", "software:git"]}
    (repo / "solution" / "all-present" / "1.0.0" / "meta.json").write_text(json.dumps(meta))


def synthetic_universe(n: int, seed: int = 0, conflict_depth: int = 40):
    """n software, 5 versions each, 0-3 deps on later software with ranges; plus a chain
    root -> c0 -> ... -> c{depth} whose end needs leaf<1 while root needs leaf>=2."""
    from cr.resolve.provider import Universe
    from cr.software.recipe import Recipe

    rng = random.Random(seed)
    recipes = {}
    versions = ["1.0", "1.5", "2.0", "2.5", "3.0"]
    for i in range(n):
        deps = []
        for j in rng.sample(range(i + 1, n), k=min(3, n - i - 1)) if i < n - 1 else []:
            lo = rng.choice(["1.0", "1.5", "2.0"])
            deps.append(f"software:s{j}@>={lo}")
        recipes[f"s{i}"] = _recipe(f"s{i}", versions, deps)
    chain = [f"c{k}" for k in range(conflict_depth)]
    for k, name in enumerate(chain):
        nxt = chain[k + 1] if k + 1 < len(chain) else "leaf"
        recipes[name] = _recipe(name, ["1.0", "2.0"], [f"software:{nxt}" + ("@<1" if nxt == "leaf" else "")])
    recipes["leaf"] = _recipe("leaf", ["0.5", "2.0"], [])
    markers = {"platform_machine": "x86_64", "sys_platform": "linux", "python_version": "3.11"}
    return Universe([], recipes, markers), Recipe


def _recipe(name, versions, deps):
    from cr.software.recipe import Recipe

    meta = {"uid": "0" * 16, "kind": "software", "name": name, "version": "1.0.0", "deps": deps,
            "install": [{"method": "pip", "versions": versions, "packages": [name + "=={version}"]}]}
    return Recipe.from_meta(meta)


def bench_graph(n: int, runs: int) -> dict:
    from cr.resolve.resolver import ResolutionConflict, resolve
    from cr.software.recipe import parse_requirement

    universe, _ = synthetic_universe(n)
    ok_request = [parse_requirement("software:s0", requested_by="bench")]
    bad_request = [parse_requirement("software:c0", requested_by="bench"), parse_requirement("software:leaf@>=2", requested_by="bench")]
    lock_times, conflict_times, chosen, message = [], [], 0, ""
    for _ in range(runs):
        t0 = time.perf_counter()
        chosen = len(resolve(ok_request, universe).chosen)
        lock_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        try:
            resolve(bad_request, universe)
        except ResolutionConflict as exc:
            message = exc.message
        conflict_times.append(time.perf_counter() - t0)
    return {"software": len(universe.recipes), "locked": chosen, "lock_s": lock_times,
            "conflict_s": conflict_times, "explanation": message}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--graph", type=int, default=300)
    ap.add_argument("--json", help="write the raw figures to this file ('-' for stdout)")
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="cr-bench-resolve-"))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
        env["CR_HOME"] = str(home)
        py = sys.executable
        cr = [py, "-m", "cr"]
        write_solution(home)
        subprocess.run(cr + ["repo", "add", str(home / "benchrepo")], env=env, check=True, capture_output=True)
        for warm in (cr + ["detect"], cr + ["resolve", "solution:all-present"]):  # warm index, detection, lock
            subprocess.run(warm, env=env, check=True, capture_output=True)
        samples = medians({
            "python -c pass": [py, "-c", "pass"],
            "cr detect (every shipped recipe)": cr + ["detect"],
            "cr resolve (all present, cached lock)": cr + ["resolve", "solution:all-present", "--json"],
            "cr --version": cr + ["--version"],
        }, env, args.runs)
        os.environ["CR_HOME"] = str(home)
        graph = bench_graph(args.graph, max(3, args.runs // 5))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    base = statistics.median(samples["python -c pass"])
    targets = {"cr detect (every shipped recipe)": 1.0, "cr resolve (all present, cached lock)": 0.15}
    print(f"{'measurement':42} {'median':>9} {'min':>9} {'x python':>9} {'target':>8}")
    for key, values in samples.items():
        med, lo = statistics.median(values), min(values)
        target = targets.get(key)
        verdict = "" if target is None else ("PASS" if med <= target else "MISS")
        print(f"{key:42} {med * 1000:8.1f}ms {lo * 1000:8.1f}ms {med / base:8.1f}x {'' if target is None else f'{target:.2f}s':>8} {verdict}")
    print(f"\nresolver, synthetic graph of {graph['software']} software (in process, {len(graph['lock_s'])} runs):")
    print(f"  to a lock of {graph['locked']} software: median {statistics.median(graph['lock_s']) * 1000:.1f} ms")
    print(f"  to the explanation of a conflict {40} levels deep: median {statistics.median(graph['conflict_s']) * 1000:.1f} ms")
    print(f"  explanation: {graph['explanation']}")
    if args.json:
        data = {"samples_s": samples, "graph": graph}
        text = json.dumps(data, indent=2)
        (sys.stdout.write(text + "\n") if args.json == "-" else Path(args.json).write_text(text))


if __name__ == "__main__":
    main()
