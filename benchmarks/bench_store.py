#!/usr/bin/env python
"""Store benchmark: `cr` start-up, `cr find` over a warm index, bulk `cr.new`, incremental refresh.

Builds N components (default 10,000) spread over 3 plain-directory repositories registered
with cr.api.repo_add in a temporary CR_HOME, then measures, as medians of --runs runs:

  python -c pass                      the baseline every ratio is taken against
  import cr.cli.main                  what every `cr` command pays before doing anything
  cr --version
  cr find model --tags TAG            warm index (nothing changed since the last refresh)
  cr find ... after touching 1 meta   one meta.json rewritten just before the call
  cr find ... again within 2 s        the same file is still 'racy': read and re-hashed again
  cr find --tags TAG                  every kind (a refresh cannot be narrowed to one kind)
  cr find model                       every model (~40% of N) drawn as a table
  cr.api.find / Index.refresh()       in-process, warm and after touching 1 meta
  cr.api.new x M                      in a fresh CR_HOME, one child process per run, and
                                      the refresh right after it (cr.new indexes what it
                                      writes as racy, so that refresh re-reads and re-hashes
                                      them all, parsing none that did not change)
  cold index build                    first refresh over all N metas (once)

The index (cr.store.index) treats a meta modified less than 2 s before a refresh as
'racy': its (mtime, size) is not trusted, and every refresh reads it again and compares
the sha256 of its bytes (parsing it only if they changed) until one finds it 2 s old. So the touched-meta figures are taken right after the write (that is what
a user editing a meta and running `cr find` gets), and after each touch the benchmark
waits the window out before the next warm measurement, so that warm means warm.

Subprocess timings are time.perf_counter() around subprocess.run() of the console script
next to the interpreter running this file (the venv's `cr`), interleaved in a shuffled
order within each run so that drift on a shared machine hits every command alike.
Targets are absolute seconds (the cr.api.new one scales with --new); the ratio column
(median / median of `python -c pass`) is what to compare between machines. Subprocesses
cache bytecode in a private PYTHONPYCACHEPREFIX by default (--bytecode env to leave the
environment alone), since an installed reefkit has its .pyc files while a dev shell
with PYTHONDONTWRITEBYTECODE=1 would compile cr on every call.

    .venv/bin/python benchmarks/bench_store.py                  # full: 10,000 components, 15 runs
    .venv/bin/python benchmarks/bench_store.py --components 2000 --runs 5
    .venv/bin/python benchmarks/bench_store.py --json results.json   # '-' for stdout
    .venv/bin/python benchmarks/bench_store.py --layouts             # by layout, 10,000 and 100,000 (LAYOUTS_DOC)
    .venv/bin/python benchmarks/bench_store.py --layouts --large 0   # the 10,000-component layouts only

Everything is created under one temporary directory, removed at exit (--keep to inspect).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Kinds with their share of the generated components, and the tag pool.
KIND_WEIGHTS = (("model", 40), ("dataset", 25), ("solution", 15), ("software", 15), ("platform", 5))
TAG_POOL = (
    "onnx", "tflite", "torch", "vision", "nlp", "audio", "tabular", "classification",
    "detection", "segmentation", "int8", "fp16", "edge", "server", "experimental", "deprecated",
)
HOT_TAG = "bench-hot"        # on HOT_FRACTION of components: what the timed `cr find` asks for
HOT_FRACTION = 0.02
REPOS = ("bench-a", "bench-b", "bench-c")
RACY_S = 2.0                 # cr.store.snapshot.RACY_NS: metas this fresh are re-read (re-hashed) next refresh
SETTLE_S = RACY_S + 0.15

TARGETS = {                  # seconds, from the issue
    "find_warm": 0.15,
    "new_total": 2.0,
    "find_touched": 0.2,
}


# -- generating a store -------------------------------------------------------------------

def _meta(rng: random.Random, kind: str, name: str, version: str, i: int) -> dict:
    tags = rng.sample(TAG_POOL, rng.randint(1, 4))
    if rng.random() < HOT_FRACTION:
        tags.append(HOT_TAG)
    meta = {
        "uid": "%016x" % rng.getrandbits(64),
        "kind": kind,
        "name": name,
        "version": version,
        "tags": tags,
        "description": f"Synthetic {kind} #{i} for the store benchmark ({', '.join(tags[:2])})",
        "license": rng.choice(("MIT", "Apache-2.0", "CC-BY-4.0")),
        "deps": [],
        "files": {},
    }
    if kind == "model":
        meta.update(format=rng.choice(("onnx", "tflite", "torchscript")), task=rng.choice(("classification", "detection", "other")))
    elif kind == "dataset":
        meta.update(format=rng.choice(("npz", "csv", "image-folder")), samples=rng.randint(100, 100000))
    return meta


def generate(root: Path, count: int, rng: random.Random) -> tuple[list[Path], dict]:
    """count valid components over len(REPOS) repos under root; returns (repo dirs, stats)."""
    repo_dirs = []
    for name in REPOS:
        d = root / name
        d.mkdir(parents=True)
        (d / "cr-repo.json").write_text(json.dumps({"name": name, "uid": secrets.token_hex(8), "version": "1.0.0"}) + "\n")
        repo_dirs.append(d)
    kinds = [k for k, _ in KIND_WEIGHTS]
    weights = [w for _, w in KIND_WEIGHTS]
    stats = {"components": 0, "by_kind": dict.fromkeys(kinds, 0), "hot_models": 0, "hot": 0, "hot_model_metas": [], "model_metas": []}
    n_name = 0
    while stats["components"] < count:
        kind = rng.choices(kinds, weights)[0]
        name = f"{kind[:3]}-{n_name:05d}"
        n_name += 1
        repo = repo_dirs[n_name % len(repo_dirs)]
        for version in ("1.0.0", "1.1.0", "2.0.0")[: rng.choice((1, 1, 2, 3))]:
            if stats["components"] >= count:
                break
            meta = _meta(rng, kind, name, version, stats["components"])
            if kind == "model" and not stats["hot_model_metas"] and HOT_TAG not in meta["tags"]:
                meta["tags"].append(HOT_TAG)  # at least one, whatever --components
            path = repo / kind / name / version / "meta.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            stats["components"] += 1
            stats["by_kind"][kind] += 1
            stats["hot"] += HOT_TAG in meta["tags"]
            stats["hot_models"] += kind == "model" and HOT_TAG in meta["tags"]
            if kind == "model":
                stats["model_metas"].append(path)
                if HOT_TAG in meta["tags"]:
                    stats["hot_model_metas"].append(path)
    return repo_dirs, stats


def touch_meta(path: Path, stamp: str) -> None:
    """Rewrite a meta in place (as an editor would) with a new description."""
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["description"] = f"{stamp} by the store benchmark"
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


# -- measuring ----------------------------------------------------------------------------

class Samples:
    def __init__(self):
        self.data: dict[str, list[float]] = {}
        self.extra: dict[str, object] = {}

    def add(self, key: str, seconds: float) -> None:
        self.data.setdefault(key, []).append(seconds)


def cr_command(python: str) -> list[str]:
    """The console script `cr` next to python, run by python (what its shebang does)."""
    script = Path(python).parent / "cr"
    if script.is_file():
        return [python, str(script)]
    return [python, "-c", "import sys; from cr.cli.main import main; sys.argv[0] = 'cr'; main()"]


def timed_run(cmd: list[str], env: dict, check_out: str | None = None) -> float:
    # cwd: a neutral directory, so that `python -c` never imports cr from a source checkout
    # that happens to be the current directory instead of the installed one
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env["CR_HOME"])
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode(errors='replace')}")
    if check_out is not None and check_out not in proc.stdout.decode(errors="replace"):
        raise SystemExit(f"unexpected output of {' '.join(cmd)}:\n{proc.stdout.decode(errors='replace')[:2000]}")
    return elapsed


def child_new(count: int, seed: int) -> None:
    """--_child-new: create count components with cr.api.new in $CR_HOME; print the seconds."""
    import cr.api

    rng = random.Random(seed)
    kinds = [k for k, _ in KIND_WEIGHTS]
    weights = [w for _, w in KIND_WEIGHTS]
    plan = []
    for i in range(count):
        tags = rng.sample(TAG_POOL, rng.randint(1, 4)) + ([HOT_TAG] if rng.random() < HOT_FRACTION else [])
        plan.append((rng.choices(kinds, weights)[0], f"new-{i:05d}", tags))
    cr.api.open_index().close()  # the shipped repos indexed first, as in any used CR_HOME
    t0 = time.perf_counter()
    for kind, name, tags in plan:
        cr.api.new(kind, name, version="1.0.0", tags=tags, description=f"created by the store benchmark: {name}")
    elapsed = time.perf_counter() - t0
    # cr.new indexes each meta while it is younger than the racy window, so the next
    # refresh (the next `cr find`) reads and re-hashes every one of them: time that too.
    index = cr.api.open_index(refresh=False)
    try:
        t0 = time.perf_counter()
        stats = index.refresh()
        refresh_s = time.perf_counter() - t0
    finally:
        index.close()
    print(json.dumps({"seconds": elapsed, "count": count, "refresh_after_s": refresh_s,
                      "refresh_after_parsed": getattr(stats, "parsed", None),
                      "refresh_after_rehashed": getattr(stats, "rehashed", None)}))


def measure_new(python: str, script: str, root: Path, count: int, runs: int, seed: int, env: dict, samples: Samples) -> None:
    for run in range(runs):
        home = root / f"new-home-{run}"
        child_env = dict(env, CR_HOME=str(home))
        proc = subprocess.run(
            [python, script, "--_child-new", str(count), "--seed", str(seed + run)],
            env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(root),
        )
        if proc.returncode != 0:
            raise SystemExit(f"cr.api.new child failed:\n{proc.stderr}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        made = sum(1 for _ in (home / "local").glob("*/*/*/meta.json"))
        if made != count:
            raise SystemExit(f"cr.api.new child made {made} components, expected {count}")
        samples.add("new_total", result["seconds"])
        samples.add("refresh_after_new", result["refresh_after_s"])
        samples.extra["refresh_after_new_parsed"] = result["refresh_after_parsed"]
        samples.extra["refresh_after_new_rehashed"] = result.get("refresh_after_rehashed")
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--components", type=int, default=10_000, help="components to generate (default 10000)")
    ap.add_argument("--runs", type=int, default=15, help="runs of each timed command (default 15)")
    ap.add_argument("--new", type=int, default=2000, dest="new_count", help="components created with cr.api.new per run (default 2000)")
    ap.add_argument("--new-runs", type=int, default=None, help="runs of the cr.api.new measurement (default min(--runs, 5))")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE ('-' for stdout)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (its path is printed)")
    ap.add_argument(
        "--bytecode", choices=("cached", "env"), default="cached",
        help="cached (default): subprocesses cache .pyc files in a private PYTHONPYCACHEPREFIX, as a "
             "pip-installed reefkit has them, even where PYTHONDONTWRITEBYTECODE is set; env: leave "
             "the environment's bytecode settings alone",
    )
    ap.add_argument("--layouts", action="store_true", help="time warm `cr find` by repository layout instead (see LAYOUTS_DOC)")
    ap.add_argument("--large", type=int, default=100_000, help="--layouts: components of the large layouts (0: none)")
    ap.add_argument("--edit-runs", type=int, default=3, help="--layouts: runs that also time `cr find` after an edit")
    ap.add_argument("--small", type=int, default=1, choices=(0, 1),
                    help="--layouts: 0 leaves out the --components layouts (only the --large ones run)")
    ap.add_argument("--only-layout", choices=("kind/name/version", "name"), default=None,
                    help="--layouts: time only this repository layout")
    ap.add_argument("--cold-runs", type=int, default=1,
                    help="--layouts: first `cr find` after `cr repo add` (a cold index build), timed this many times "
                         "per variant, each in a fresh CR_HOME")
    ap.add_argument("--baseline", metavar="SRC", default=None,
                    help="--layouts: a source tree of another reefkit (e.g. `git archive main`); its `cr` package is "
                         "put first on PYTHONPATH and timed beside this one, interleaved, each with its own CR_HOME")
    ap.add_argument("--_child-new", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._child_new is not None:
        child_new(args._child_new, args.seed)
        return 0
    if args.components < 100 or args.runs < 1:
        ap.error("--components must be at least 100 and --runs positive")

    python = sys.executable
    root = Path(tempfile.mkdtemp(prefix="cr-bench-store-"))

    def log(*parts):
        print(*parts, file=sys.stderr, flush=True)

    old_home = os.environ.get("CR_HOME")
    try:
        if args.layouts:
            return bench_layouts(args, python, root, log)
        return _bench(args, python, root, log)
    finally:
        if old_home is None:
            os.environ.pop("CR_HOME", None)
        else:
            os.environ["CR_HOME"] = old_home
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _bench(args, python: str, root: Path, log) -> int:
    rng = random.Random(args.seed)
    home = root / "home"
    env = dict(os.environ, CR_HOME=str(home))
    env.pop("PYTHONWARNINGS", None)
    if args.bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    os.environ["CR_HOME"] = str(home)

    import cr.api
    from cr.store import registry
    from cr.store.index import Index

    # 1. the store
    log(f"generating {args.components} components in {len(REPOS)} repos under {root} ...")
    t0 = time.perf_counter()
    repo_dirs, gen = generate(root / "repos", args.components, rng)
    for d in repo_dirs:
        cr.api.repo_add(d)
    gen_s = time.perf_counter() - t0
    log(f"  {gen['by_kind']}; tagged {HOT_TAG}: {gen['hot']} ({gen['hot_models']} models); {gen_s:.1f} s")

    # 2. cold build, once every file is older than the racy window (else every meta would
    #    be stored as racy and read again by the next refresh).
    time.sleep(SETTLE_S)
    samples = Samples()

    def refresh_once():
        index = Index(home, registry.all_repos(home))
        try:
            t = time.perf_counter()
            stats = index.refresh()
            return time.perf_counter() - t, stats
        finally:
            index.close()

    cold_s, stats = refresh_once()
    samples.add("cold_build", cold_s)
    log(f"  cold index build: {cold_s:.2f} s, {getattr(stats, 'parsed', '?')} parsed")
    index = Index(home, registry.all_repos(home))
    try:
        invalid = index.invalid()
    finally:
        index.close()
    ours = [(p, e) for r, p, e in invalid if r in REPOS]
    if ours:
        raise SystemExit(f"{len(ours)} generated metas are invalid (fix the generator), e.g. {ours[0][1]}")
    if invalid:
        log(f"  warning: {len(invalid)} invalid meta(s) in the shipped repos, e.g. {invalid[0][2]}")

    def settle():
        """Wait out the racy window of the last write, then let one refresh record the files.

        A second refresh must then parse nothing. If it still does, metas outside the
        benchmark keep changing (the shipped repos of a source checkout being edited):
        warned about and counted, since it makes the warm figures pay for re-parsing.
        """
        for _ in range(3):
            time.sleep(SETTLE_S)
            refresh_once()
            _, st = refresh_once()
            parsed = getattr(st, "parsed", 0) + (getattr(st, "rehashed", 0) or 0)
            if not parsed:
                return
        samples.extra["unsettled"] = samples.extra.get("unsettled", 0) + 1
        log(f"  warning: the index still re-reads {parsed} meta(s) {3 * SETTLE_S:.0f} s after the last "
            f"write: something else is writing metas (the shipped repos?); warm figures may include re-parsing")

    settle()

    cr_cmd = cr_command(python)
    find_args = ["find", "model", "--tags", HOT_TAG]
    commands = {
        "python_pass": ([python, "-c", "pass"], None),
        "import_cli": ([python, "-c", "import cr.cli.main"], None),
        "version": (cr_cmd + ["--version"], "reefkit"),
        "find_warm": (cr_cmd + find_args, "model:"),
        "find_nokind": (cr_cmd + ["find", "--tags", HOT_TAG], "model:"),
        "find_all": (cr_cmd + ["find", "model"], "model:"),
    }
    # warm-up: .pyc files, page cache, the index's WAL
    for cmd, expect in commands.values():
        timed_run(cmd, env, expect)
    settle()

    touch_rng = random.Random(args.seed + 1)
    log(f"timing {args.runs} interleaved runs (each waits out the {RACY_S:.0f} s racy window twice) ...")
    for run in range(args.runs):
        order = list(commands)
        rng.shuffle(order)
        for key in order:
            cmd, expect = commands[key]
            samples.add(key, timed_run(cmd, env, expect))
        # in-process: warm refresh and warm api.find (validator/imports already loaded)
        samples.add("refresh_warm", refresh_once()[0])
        t = time.perf_counter()
        found = cr.api.find("model", tags=[HOT_TAG])
        samples.add("api_find_warm", time.perf_counter() - t)
        if len(found) != gen["hot_models"]:
            raise SystemExit(f"cr.api.find found {len(found)} components, expected {gen['hot_models']}")
        # `cr find` right after one meta it lists changed (the output must show the change),
        # then again while that meta is still racy
        stamp = f"touched-{run:03d}"
        touch_meta(touch_rng.choice(gen["hot_model_metas"]), stamp)
        samples.add("find_touched", timed_run(cr_cmd + find_args, env, stamp))
        samples.add("find_racy_again", timed_run(cr_cmd + find_args, env, stamp))
        settle()
        # in-process refresh right after one meta changed
        touch_meta(touch_rng.choice(gen["model_metas"]), f"touched-{run:03d}-api")
        t, st = refresh_once()
        if getattr(st, "parsed", 1) < 1:
            raise SystemExit("the refresh after touching one meta did not notice it")
        samples.add("refresh_touched", t)
        settle()
        log(f"  run {run + 1}/{args.runs}: find warm {samples.data['find_warm'][-1] * 1000:.0f} ms, "
            f"after touch {samples.data['find_touched'][-1] * 1000:.0f} ms")

    new_runs = args.new_runs if args.new_runs is not None else min(args.runs, 5)
    if new_runs > 0 and args.new_count > 0:
        log(f"timing cr.api.new x {args.new_count} in a fresh CR_HOME, {new_runs} runs ...")
        measure_new(python, str(Path(__file__).resolve()), root, args.new_count, new_runs, args.seed, env, samples)

    report(args, samples, gen, python)
    return 0


ROWS = (  # key, label, target key
    ("python_pass", "python -c pass (baseline)", None),
    ("import_cli", "python -c 'import cr.cli.main'", None),
    ("version", "cr --version", None),
    ("find_warm", "cr find model --tags {tag} (warm index)", "find_warm"),
    ("find_touched", "cr find ... right after rewriting 1 meta", "find_touched"),
    ("find_racy_again", "cr find ... again, <2 s later (racy re-read)", None),
    ("find_nokind", "cr find --tags {tag} (any kind, warm)", None),
    ("find_all", "cr find model (all {models} models, table)", None),
    ("api_find_warm", "cr.api.find(...) in-process, warm", None),
    ("refresh_warm", "Index.refresh() in-process, nothing changed", None),
    ("refresh_touched", "Index.refresh() in-process, 1 meta rewritten", None),
    ("new_total", "cr.api.new x {new} (fresh CR_HOME, total)", "new_total"),
    ("refresh_after_new", "Index.refresh() right after those cr.api.new", None),
    ("cold_build", "cold index build of {n} metas (once)", None),
)


def report(args, samples: Samples, gen: dict, python: str) -> None:
    base = statistics.median(samples.data["python_pass"])
    rows = []
    for key, label, target_key in ROWS:
        values = samples.data.get(key)
        if not values:
            continue
        median = statistics.median(values)
        target = TARGETS.get(target_key) if target_key else None
        if target_key == "new_total":  # the 2 s is for 2,000 components: scale linearly
            target *= args.new_count / 2000
        rows.append({
            "key": key,
            "measurement": label.format(tag=HOT_TAG, new=args.new_count, n=args.components, models=gen["by_kind"]["model"]),
            "median_s": median,
            "min_s": min(values),
            "samples": len(values),
            "ratio_vs_python": median / base,
            "target_s": target,
            "status": None if target is None else ("PASS" if median <= target else "MISS"),
            "values_s": values,
        })
    header = ("measurement", "median", "min", "x python", "target", "")
    lines = [(
        r["measurement"], f"{r['median_s'] * 1000:.1f} ms", f"{r['min_s'] * 1000:.1f} ms",
        f"{r['ratio_vs_python']:.1f}x", "" if r["target_s"] is None else f"<= {r['target_s'] * 1000:.0f} ms",
        r["status"] or "",
    ) for r in rows]
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    out = sys.stdout if args.json != "-" else sys.stderr
    print(f"\nreefkit store benchmark: {gen['components']} components in {len(REPOS)} repos, "
          f"{args.runs} runs, python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"bytecode {args.bytecode}", file=out)
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))), file=out)
    for l in lines:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(l, widths))), file=out)
    print(f"(`cr find model --tags {HOT_TAG}` returns {gen['hot_models']} rows; 'x python' = median / median of "
          f"`python -c pass`; targets are absolute seconds)", file=out)
    if samples.extra.get("unsettled"):
        print(f"(WARNING: {samples.extra['unsettled']} time(s) the index did not settle: metas outside the "
              f"benchmark were being modified during the run; see the log)", file=out)
    if "refresh_after_new_parsed" in samples.extra:
        rehashed = samples.extra.get("refresh_after_new_rehashed")
        print(f"(the refresh right after cr.api.new parsed {samples.extra['refresh_after_new_parsed']} metas again"
              + (f" and re-hashed {rehashed}" if rehashed is not None else "")
              + ": cr.new indexes what it writes as racy)", file=out)
    if args.json:
        data = {
            "components": gen["components"],
            "by_kind": gen["by_kind"],
            "hot_tag": HOT_TAG,
            "hot_models": gen["hot_models"],
            "runs": args.runs,
            "new_count": args.new_count,
            "python": python,
            "python_version": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "baseline_s": base,
            "bytecode": args.bytecode,
            "argv": sys.argv,
            "extra": samples.extra,
            "rows": rows,
        }
        text = json.dumps(data, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")


# -- layouts: warm `cr find` over one big repository or several, with or without a version level --

LAYOUTS_DOC = """--layouts: warm `cr find` over each repository layout, as medians of --runs runs.

Each layout gets its own CR_HOME and its own tree of model components (written directly,
not through cr), every one tagged `common`, one in N/1000 also `hit`:

  1 x N      kind/name/version   <repo>/model/mNNNNNN/1.0.0/meta.json
  1 x N      name layout         <repo>/mNNNNNN/meta.json (cr-repo.json: layout name, kind model)
  3 x N/3    both layouts
  1 x --large (default 100,000), both layouts (--large 0 leaves them out)

and times, interleaved with `python -c pass` in a shuffled order:

  cr find model --tags hit,common     1,000 hits, drawn as a table
  cr find model --tags nosuchtag      0 hits
  cr find ... after an in-place edit  one meta rewritten (same size) just before the call
                                      (the index reads that one alone); the output must
                                      show the edit
  cold build                          the first `cr find` after `cr repo add` (--cold-runs)

--baseline SRC times another source tree (e.g. `git archive main`) beside this one,
interleaved, each with its own CR_HOME; --small 0 and --only-layout narrow the plan.

The index is settled first (written, then the racy window waited out, then refreshed), so
'warm' means what a user gets when nothing changed since the last command.
"""


def write_layout(root: Path, count: int, repos: int, versioned: bool) -> list[Path]:
    """count model components over repos repositories under root; returns the repo dirs."""
    every = max(1, count // 1000)
    dirs = []
    for r in range(repos):
        d = root / f"repo{r}"
        d.mkdir(parents=True)
        desc = {"name": f"repo{r}", "uid": secrets.token_hex(8), "version": "1.0.0"}
        if not versioned:
            desc.update(layout="name", kind="model")
        (d / "cr-repo.json").write_text(json.dumps(desc) + "\n")
        dirs.append(d)
    for i in range(count):
        name = f"m{i:06d}"
        leaf = os.path.join(dirs[i % repos], "model", name, "1.0.0") if versioned else os.path.join(dirs[i % repos], name)
        os.makedirs(leaf)
        tags = ["common", f"t{i % 10}"] + (["hit"] if i % every == 0 else [])
        meta = {"uid": "%016x" % (i + 1), "kind": "model", "name": name, "version": "1.0.0", "tags": tags,
                "description": f"layout benchmark model {i:06d} padding"}
        with open(os.path.join(leaf, "meta.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(meta, indent=2) + "\n")
    return dirs


def _rows(stdout: bytes) -> int:
    return sum(1 for line in stdout.decode(errors="replace").splitlines() if line.startswith("model:"))


def _children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far (theirs included)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_checked(cmd: list[str], env: dict, rows: int | None = None, contains: str | None = None,
                 cpu: list[float] | None = None) -> float:
    """Wall seconds of cmd; cpu, when given, gets its CPU seconds (with its own children's)."""
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env["CR_HOME"])
    elapsed = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(_children_cpu() - cpu0)
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    if proc.returncode != 0 or (rows is not None and _rows(proc.stdout) != rows) or (contains and contains not in out):
        raise SystemExit(f"unexpected result of {' '.join(cmd)} (exit {proc.returncode}, {_rows(proc.stdout)} rows):\n"
                         f"{out[:2000]}")
    return elapsed


def bench_layouts(args, python: str, root: Path, log) -> int:
    base_env = dict(os.environ)
    base_env.pop("PYTHONWARNINGS", None)
    if args.bytecode == "cached":
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        base_env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    # the variants timed side by side: this tree, and the baseline's with its own .pyc cache
    variants = {"this": dict(base_env)}
    if args.baseline:
        src = str(Path(args.baseline).resolve())
        variants["baseline"] = dict(base_env, PYTHONPATH=src + os.pathsep + base_env.get("PYTHONPATH", ""))
        if args.bytecode == "cached":
            variants["baseline"]["PYTHONPYCACHEPREFIX"] = str(root / "pycache-baseline")
    cr_cmd = cr_command(python)
    n, big = args.components, args.large
    plan = []
    if args.small:
        plan += [(f"1 x {n:,}", n, 1, True), (f"1 x {n:,}", n, 1, False),
                 (f"3 x {n // 3:,}", n // 3 * 3, 3, True), (f"3 x {n // 3:,}", n // 3 * 3, 3, False)]
    if big:
        plan += [(f"1 x {big:,}", big, 1, True), (f"1 x {big:,}", big, 1, False)]
    if args.only_layout:
        plan = [p for p in plan if p[3] == (args.only_layout == "kind/name/version")]
    rng = random.Random(args.seed)
    results = []
    for number, (label, count, repos, versioned) in enumerate(plan):
        where = root / f"layout-{number}"
        layout = "kind/name/version" if versioned else "name"
        log(f"{label} ({layout}): writing {count:,} components ...")
        t0 = time.perf_counter()
        dirs = write_layout(where / "repos", count, repos, versioned)
        log(f"  written in {time.perf_counter() - t0:.1f} s")
        hits = len(range(0, count, max(1, count // 1000)))
        find_hit = cr_cmd + ["find", "model", "--tags", "hit,common"]
        find_none = cr_cmd + ["find", "model", "--tags", "nosuchtag"]
        envs: dict[str, dict] = {}
        colds: dict[str, list[float]] = {v: [] for v in variants}
        cold_cpu: dict[str, list[float]] = {v: [] for v in variants}
        for cold_run in range(max(1, args.cold_runs)):
            order = list(variants) if cold_run % 2 == 0 else list(reversed(variants))
            for variant in order:
                home = where / f"home-{variant}"
                shutil.rmtree(home, ignore_errors=True)
                home.mkdir(parents=True)
                env = envs[variant] = dict(variants[variant], CR_HOME=str(home))
                for d in dirs:
                    _run_checked(cr_cmd + ["repo", "add", str(d)], env)
                colds[variant].append(_run_checked(find_none, env, contains="no matching components",
                                                   cpu=cold_cpu[variant]))
                log(f"  cold build ({variant}): {colds[variant][-1]:.1f} s ({cold_cpu[variant][-1]:.1f} CPU s)")
        time.sleep(SETTLE_S)
        for env in envs.values():
            _run_checked(find_none, env)  # settles the metas indexed while racy; takes the snapshot
            for cmd in (find_hit, find_none, [python, "-c", "pass"]):  # warm-up: .pyc files, page cache
                _run_checked(cmd, env)
        log(f"  timing {args.runs} runs ...")
        samples = {v: {"python": [], "hit": [], "none": [], "edited": []} for v in variants}
        edit_cpu: dict[str, list[float]] = {v: [] for v in variants}
        commands = {"python": ([python, "-c", "pass"], None, None), "hit": (find_hit, hits, None),
                    "none": (find_none, 0, "no matching components")}
        every = max(1, count // 1000)
        hit_names = [f"m{i:06d}" for i in range(0, count, every) if i % repos == 0][:50]
        metas = [dirs[0] / "model" / nm / "1.0.0" / "meta.json" if versioned else dirs[0] / nm / "meta.json" for nm in hit_names]
        for run in range(args.runs):
            order = [(v, k) for v in variants for k in commands]
            rng.shuffle(order)
            for variant, key in order:
                cmd, rows, contains = commands[key]
                samples[variant][key].append(_run_checked(cmd, envs[variant], rows=rows, contains=contains))
            if run < args.edit_runs:
                # one listed meta rewritten in place (as an editor would), just before the call;
                # each variant's index is stale until its own next command, which is timed
                stamp = f"edited-{run:03d}"
                meta = metas[run % len(metas)]
                data = json.loads(meta.read_text(encoding="utf-8"))
                data["description"] = stamp
                meta.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
                for variant in (list(variants) if run % 2 == 0 else list(reversed(variants))):
                    samples[variant]["edited"].append(_run_checked(find_hit, envs[variant], rows=hits, contains=stamp,
                                                                   cpu=edit_cpu[variant]))
                time.sleep(SETTLE_S)
                for env in envs.values():
                    _run_checked(find_none, env)  # settled again: the next runs are warm
        for variant in variants:
            got = samples[variant]
            base = statistics.median(got["python"])
            row = {"variant": variant, "layout": layout, "repos": repos, "components": count,
                   "python_pass_s": base, "hits": hits, "cold_build_s": statistics.median(colds[variant]),
                   "cold_build_values_s": colds[variant], "cold_build_cpu_values_s": cold_cpu[variant],
                   "cold_build_cpu_s": statistics.median(cold_cpu[variant]),
                   "edited_cpu_values_s": edit_cpu[variant],
                   **({"edited_cpu_s": statistics.median(edit_cpu[variant])} if edit_cpu[variant] else {}),
                   **{f"{k}_s": statistics.median(v) for k, v in got.items() if v and k != "python"},
                   **{f"{k}_values_s": v for k, v in got.items()}}
            results.append(row)
            log(f"  {variant}: find 1,000 hits {row['hit_s'] * 1000:.0f} ms, 0 hits {row['none_s'] * 1000:.0f} ms, "
                f"after an edit {row['edited_s'] * 1000:.0f} ms ({row['edited_cpu_s']:.2f} CPU s), "
                f"cold build {row['cold_build_s']:.1f} s ({row['cold_build_cpu_s']:.1f} CPU s), "
                f"python -c pass {base * 1000:.0f} ms" if "edited_s" in row else "")
        shutil.rmtree(where, ignore_errors=True)  # 100,000 components take ~1 GB of directories
    report_layouts(args, results)
    return 0


def _target(count: int) -> float:
    return 0.15 if count <= 10_000 else 1.0


def report_layouts(args, results: list[dict]) -> None:
    out = sys.stdout if args.json != "-" else sys.stderr
    print(f"\nreefkit `cr find` by layout: {args.runs} runs, python {platform.python_version()} on "
          f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end", file=out)
    header = ("repos x components", "layout", "variant", "1,000 hits", "x python", "0 hits", "x python", "after edit",
              "cold build", "python", "target", "")
    lines = []
    for r in results:
        worst = max(r["hit_s"], r["none_s"])
        lines.append((
            f"{r['repos']} x {r['components'] // r['repos']:,}", r["layout"], r["variant"],
            f"{r['hit_s'] * 1000:.0f} ms", f"{r['hit_s'] / r['python_pass_s']:.1f}x",
            f"{r['none_s'] * 1000:.0f} ms", f"{r['none_s'] / r['python_pass_s']:.1f}x",
            f"{r['edited_s'] * 1000:.0f} ms ({r['edited_cpu_s']:.2f} CPU s)" if "edited_s" in r else "",
            f"{r['cold_build_s']:.1f} s ({r['cold_build_cpu_s']:.1f} CPU s)",
            f"{r['python_pass_s'] * 1000:.0f} ms", f"<= {_target(r['components']) * 1000:.0f} ms",
            "PASS" if worst <= _target(r["components"]) else "MISS",
        ))
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) if i < 3 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))), file=out)
    for l in lines:
        print("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(l, widths))), file=out)
    print("(medians of wall time of the whole command; 'x python' = median / median of `python -c pass` in the same "
          "run; 'after edit': the 1,000-hit query right after one of its metas was rewritten in place; 'cold build': "
          "the first `cr find` after `cr repo add` (median of --cold-runs); CPU s: user + system of the "
          "command and its children, median; variant 'baseline': --baseline's tree)", file=out)
    if args.json:
        text = json.dumps({"runs": args.runs, "python_version": platform.python_version(), "cpus": os.cpu_count(),
                           "argv": sys.argv, "layouts": results}, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
