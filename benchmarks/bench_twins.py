#!/usr/bin/env python
"""What routing commands through their library twins (cr.api.CLI_TWINS) costs their start-up.

The commands that moved their logic into a library module (cr show -> cr.run.describe,
cr results ... -> cr.results.queries, cr gate -> cr.run.gating) now import that module;
this times them against a baseline tree (a checkout of main: `git archive main | tar -x
-C DIR`), both run by this interpreter with PYTHONPATH set to the tree, from a folder
outside either (so the current directory does not shadow it), on one CR_HOME, interleaved
(baseline, this tree, baseline, ...) in a shuffled command order each round. Reported:
the median of --runs runs per command and tree, and the ratio this tree / baseline.
Bytecode is written (PYTHONDONTWRITEBYTECODE unset) so neither tree compiles on each call.

    .venv/bin/python benchmarks/bench_twins.py --baseline /path/to/main-checkout --runs 15
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

COMMANDS = {
    "cr show dataset:digits --json": ["show", "dataset:digits", "--json"],
    "cr show model:lenet-digits --json": ["show", "model:lenet-digits", "--json"],
    "cr results list --json": ["results", "list", "--json"],
    "cr results show UID --json": ["results", "show", "{uid}", "--json"],
    "cr env list --json": ["env", "list", "--json"],
}


def _run(tree: Path, args: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cr", *args], env={**env, "PYTHONPATH": str(tree)}, cwd=cwd,
                          capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {tree}: {done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=HERE,
                        help="a checkout of the tree to compare against (default: this tree, a ratio of about 1)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", dest="json_out", help="also write the figures here")
    opts = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cwd:
        env["CR_HOME"] = home
        # one stored result to show: a short benchmark, made by this tree
        done = subprocess.run([sys.executable, "-m", "cr", "benchmark", "model", "lenet-digits", "--backend", "onnxruntime",
                               "--min-duration", "0.2", "--min-queries", "50", "--json"],
                              env={**env, "PYTHONPATH": str(HERE)}, cwd=cwd, capture_output=True, text=True)
        uid = json.loads(done.stdout)["uid"]
        trees = {"baseline": opts.baseline.resolve(), "this tree": HERE}
        for tree in trees.values():  # warm: bytecode written, index built
            for args in COMMANDS.values():
                _run(tree, [a.format(uid=uid) for a in args], env, cwd)
        times = {(c, t): [] for c in COMMANDS for t in trees}
        rng = random.Random(0)
        for _ in range(opts.runs):
            order = list(COMMANDS)
            rng.shuffle(order)
            for command in order:
                for label, tree in trees.items():
                    times[(command, label)].append(_run(tree, [a.format(uid=uid) for a in COMMANDS[command]], env, cwd))
    rows = []
    print(f"{'command':40} {'baseline ms':>12} {'this tree ms':>13} {'ratio':>6}")
    for command in COMMANDS:
        base, mine = (statistics.median(times[(command, t)]) * 1e3 for t in trees)
        rows.append({"command": command, "baseline_ms": round(base, 1), "this_tree_ms": round(mine, 1),
                     "ratio": round(mine / base, 3)})
        print(f"{command:40} {base:12.1f} {mine:13.1f} {mine / base:6.3f}")
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps({"runs": opts.runs, "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
