#!/usr/bin/env python
"""`cr init solution` when everything is present, against CM's cached `cm run script`.

In a temporary CR_HOME the solution is initialised once (detection, resolution, lock), then
once more past the racy window, which leaves its ready stamp (cr/resolve/initstamp.py):
what a user's second and later `cr init solution NAME` find. CM (PyPI `cmind`) gets a
minimal local CM repository in a temporary CM_REPOS: the `script`, `cache` and `utils`
automations copied from a checkout of mlcommons/cm4mlops (--cm4mlops DIR; CM has no
`script` automation of its own and nothing is downloaded here) and one script,
`bench-cached`, whose _cm.yaml says `cache: true`; it is run once (CM indexes its repos and
records the cache entry), then `cm run script --tags=bench,cached` is timed: the cache hit,
where CM only loads cm-cached-state.json. `python -c pass` is the floor. The commands run
interleaved, --runs rounds; medians and ratios (cr / cm, each / python -c pass).

--before DIR also times a second cr source tree (e.g. `git archive main | tar -x -C DIR`)
in the same rounds, run as PYTHONPATH=DIR python -m cr in a CR_HOME of its own.

    .venv/bin/python benchmarks/bench_init.py --cm /path/to/venv/bin/cm --cm4mlops /path/to/cm4mlops [--runs 21]

Install CM into a virtual environment of its own: cmind 4.x installs a console script named
`cr` (an alias of its `mlcr`) that replaces reefkit's in the same environment; cmind 3.5.3
does not. Byte-code caching is left on (PYTHONDONTWRITEBYTECODE unset), as a user has it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT_META = """alias: bench-cached
uid: 7a1b2c3d4e5f6a7b
automation_alias: script
automation_uid: 5b4e0237da074764
cache: true
tags:
- bench
- cached
new_env_keys:
- CM_BENCH_CACHED
"""


def timed(cmd: list[str], env: dict, cwd: str | None = None) -> float:
    return run(cmd, env, cwd)[0]


def run(cmd: list[str], env: dict, cwd: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the command and its children)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime


def cm_repository(root: Path, cm4mlops: Path) -> Path:
    """CM_REPOS holding one repository: cm4mlops' script/cache/utils automations and bench-cached."""
    src = root / "bench-repo"
    for name in ("script", "cache", "utils"):
        shutil.copytree(cm4mlops / "automation" / name, src / "automation" / name)
    (src / "cmr.yaml").write_text("alias: bench@cached-script\nuid: 3c1f0a2b4d5e6f70\ngit: false\nversion: 0.0.1\n")
    script = src / "script" / "bench-cached"
    script.mkdir(parents=True)
    (script / "_cm.yaml").write_text(SCRIPT_META)
    (script / "run.sh").write_text('#!/bin/bash\necho "CM_BENCH_CACHED=yes" > tmp-run-env.out\n')
    (script / "run.sh").chmod(0o755)
    home = root / "cm-home"
    (home / "repos").mkdir(parents=True)
    (home / "repos.json").write_text(json.dumps([str(src)]))
    return home


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solution", default="lenet-digits-onnxruntime")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--cm", help="the cm executable (default: cm on PATH)")
    ap.add_argument("--cm4mlops", type=Path, help="a checkout of github.com/mlcommons/cm4mlops (its automation/)")
    ap.add_argument("--before", type=Path, help="another cr source tree to time in the same rounds")
    args = ap.parse_args()
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    tmp = Path(tempfile.mkdtemp(prefix="cr-bench-init-"))
    try:
        commands = {"python -c pass": ([sys.executable, "-c", "pass"], base_env, None)}
        trees = [("cr init", None)] + ([("cr init (before)", args.before.resolve())] if args.before else [])
        for label, tree in trees:
            env = {**base_env, "CR_HOME": str(tmp / ("home-" + str(len(commands))))}
            if tree is not None:
                env["PYTHONPATH"] = str(tree)
            cmd = [sys.executable, "-m", "cr", "init", "solution", args.solution]
            first = timed(cmd, env, str(tree) if tree else None)
            time.sleep(2.2)  # past the racy window: the next run leaves the ready stamp
            timed(cmd, env, str(tree) if tree else None)
            print(f"{label}: first run (detect + resolve + lock) {first:.3f} s")
            commands[label] = (cmd, env, str(tree) if tree else None)
        cm = args.cm or shutil.which("cm")
        if cm and args.cm4mlops:
            env = {**base_env, "CM_REPOS": str(cm_repository(tmp, args.cm4mlops))}
            cmd = [cm, "run", "script", "--tags=bench,cached"]
            print(f"cm run script (first: index + cache entry) {timed(cmd, env, str(tmp)):.3f} s")
            commands["cm run script (cache hit)"] = (cmd, env, str(tmp))
        else:
            print("CM not timed: give --cm (or put cm on PATH) and --cm4mlops DIR")
        for _, (cmd, env, cwd) in commands.items():  # one warm-up each
            timed(cmd, env, cwd)
        times = {label: [] for label in commands}
        cpus = {label: [] for label in commands}
        for _ in range(args.runs):
            for label, (cmd, env, cwd) in commands.items():
                wall, cpu = run(cmd, env, cwd)
                times[label].append(wall)
                cpus[label].append(cpu)
        med = {label: statistics.median(t) for label, t in times.items()}
        cpu = {label: statistics.median(t) for label, t in cpus.items()}
        floor = med["python -c pass"]
        print(f"{args.runs} interleaved rounds, medians (min) of wall time, and of CPU time (user + system):")
        for label, t in times.items():
            print(f"  {label:<28} {med[label] * 1e3:7.1f} ms ({min(t) * 1e3:.1f})  {med[label] / floor:5.2f}x python -c pass"
                  f"   CPU {cpu[label] * 1e3:6.1f} ms")
        cm_label = "cm run script (cache hit)"
        if cm_label in med:
            for label, _ in trees:
                print(f"  {label} / cm cache hit: wall {med[label] / med[cm_label]:.3f}, CPU {cpu[label] / cpu[cm_label]:.3f}"
                      "  (target <= 0.9)")
        if len(trees) > 1:
            print(f"  cr init / cr init (before): wall {med['cr init'] / med['cr init (before)']:.3f}, "
                  f"CPU {cpu['cr init'] / cpu['cr init (before)']:.3f}")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
