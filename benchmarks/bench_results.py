#!/usr/bin/env python
"""Results store benchmark: bulk inserts, filtered queries at 100,000 results, the command's wall time.

Generates N synthetic but realistic result records (default 100,000: the structure
cr.results.record.new/complete gives, this host's real platform description,
--samples raw latencies each, lognormal around a per-solution base), spread over
N/2000 solutions x 2 backends, so that one (solution, backend) pair matches 1,000 of them.
Then, in a temporary directory:

  plain JSON files          baseline: the same records json.dumps'ed into one file each
                            (C encoder, no fsync, latencies inline): the cheapest storage
  store.add x N             ResultStore(durable=False): side file + JSON (temp + rename
                            each) + one SQLite transaction per result
  store.add, durable        the default (fsync of every file and directory) on the first
                            --durable records, against plain files with fsync
  list(solution, backend)   1,000 matches: warm (median of --runs), right after one more
                            add (its shard is listed again), on a new connection, and
                            the first call after the bulk inserts (every shard listed)
  cr results list ... --json   the same query through the command (median wall of
                            --runs), against `python -c pass` (and `cr --help`, the
                            start-up any cr command pays) measured alongside
  cr results list --limit 20   the default table a user looks at
  reindex from scratch      index.sqlite deleted, rebuilt from the N files (once)

--list-memory N [N ...] measures only this: the peak RSS of a full `cr results list` (the
table, into a pipe) and `cr results list --json` over stores of N results laid out as the
store keeps them (cr.dashboard.sample.write_store: side files of 1,024 latencies, indexed
once before), each in a child process (os.wait4's ru_maxrss), median of --runs, beside
`cr --help` (what any command holds); --work DIR keeps the stores for the next run. --compare-with DIR runs the same commands with
another tree of cr first on PYTHONPATH (e.g. `git archive main cr | tar -x -C DIR`), in
the same run, interleaved: before and after on one machine.

Targets: the warm query <= 0.2 s (API and command). Ratios compare with baselines from
the same run (this kind of machine is shared and noisy).

    .venv/bin/python benchmarks/bench_results.py                        # 100,000 results, a few minutes
    .venv/bin/python benchmarks/bench_results.py --results 10000 --runs 5   # quick look
    .venv/bin/python benchmarks/bench_results.py --json figures.json    # '-' for stdout

Everything lives under one temporary directory, removed at exit (--keep keeps it).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_QUERY_S = 0.2
BACKENDS = ("onnxruntime", "torch")
PER_PAIR = 1000  # results per (solution, backend)


def _quantile(s: list, q: float) -> float:
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def make_records(n: int, samples: int, seed: int = 0):
    """Yield n records as `cr benchmark` writes them (raw latencies as array('q')).

    One record.new() gives the template (this host's real platform included, shared by
    all: the same description n times need not cost n copies in memory)."""
    from cr.results import record

    rng = random.Random(seed)
    solutions = max(1, n // (PER_PAIR * len(BACKENDS)))
    start = 1_767_225_600  # 2026-01-01T00:00:00Z
    template = record.new("benchmark", [], None, {}, None, "2026-01-01T00:00:00.000Z")
    for i in range(n):
        sol, backend = f"sol-{(i // len(BACKENDS)) % solutions}", BACKENDS[i % len(BACKENDS)]
        base = 50_000 * (1 + (i // len(BACKENDS)) % solutions % 7) * (1.4 if backend == "torch" else 1.0)
        values = array("q", (int(base * rng.lognormvariate(0.0, 0.2)) for _ in range(samples)))
        s = sorted(values)
        seconds = sum(s) / 1e9
        lat = {"count": samples, "min": s[0], "max": s[-1], "mean": sum(s) / samples,
               "stdev": statistics.pstdev(s), "iqr": _quantile(s, .75) - _quantile(s, .25)}
        for name, q in (("p50", .5), ("p90", .9), ("p95", .95), ("p99", .99), ("p99.9", .999)):
            lat[name] = _quantile(s, q)
        moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * 37)) + ".000Z"
        rec = dict(template, uid=f"{rng.getrandbits(64):016x}", started=moment)
        rec["components"] = [
            {"ref": f"solution:{sol}@1.0.0", "kind": "solution", "name": sol, "version": "1.0.0",
             "uid": f"{i % 997:016x}", "repo": "bench", "sha256": "ab" * 32},
            {"ref": "model:resnet50@1.0.0", "kind": "model", "name": "resnet50", "version": "1.0.0",
             "uid": "c355a40e4d75023b", "repo": "builtin", "sha256": "cd" * 32},
            {"ref": "action:benchmark@0.1.0", "kind": "action", "name": "benchmark", "version": "0.1.0",
             "uid": "4e9d2b7a1c0f3586", "repo": "builtin-actions", "sha256": "ef" * 32},
        ]
        rec["backend"] = {"name": backend, "entry": f"cr.runtime.backends.{backend}:B",
                          "origin": "distribution reefkit 0.1.0", "options": {}, "info": None}
        rec["config"] = {"scenario": "single-stream", "min_duration_s": 1, "min_queries": samples, "seed": 0,
                         "backend": backend, "variant": "onnx"}
        record.complete(rec, {
            "status": "ok", "error": None,
            "metrics": {"scenario": "single-stream", "validity": "VALID", "invalid_reasons": [], "queries": samples,
                        "samples": samples, "samples_per_query": 1, "batch_size": 1, "duration_s": seconds,
                        "latency_ns": lat, "throughput": {"queries_per_s": samples / seconds, "samples_per_s": samples / seconds},
                        "noise": lat["iqr"] / lat["p50"], "noisy": False, "peak_rss_bytes": 180 << 20},
            "pipeline": {"sha256": "12" * 32, "preprocess": [], "postprocess": [], "variant": "onnx", "precision": "fp32"},
            "runtime": {"python": "3.11.7", "executable": sys.executable, "pid": 1, "seconds": seconds + 1},
            "backend_info": {"framework": backend, "version": "1.0"},
        }, values)
        rec["ended"] = moment
        yield rec


def _plain_dump(records, folder: Path, fsync: bool) -> float:
    folder.mkdir(parents=True)
    t = time.perf_counter()
    for rec in records:
        raw = rec["raw"]["latencies_ns"]
        data = {**rec, "raw": {"latencies_ns": raw.tolist()}}
        with open(folder / f"{rec['uid']}.json", "w") as f:
            f.write(json.dumps(data))
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    if fsync:
        fd = os.open(folder, os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)
    return time.perf_counter() - t


def _timed_run(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return elapsed


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=100, help="raw latencies per result")
    parser.add_argument("--durable", type=int, default=500, help="results inserted with fsync (the default mode)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", dest="json_out", help="write the figures here ('-': stdout)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--list-memory", type=int, nargs="+", metavar="N",
                        help="only the peak RSS of a full `cr results list` over stores of N results")
    parser.add_argument("--compare-with", metavar="DIR", help="with --list-memory: also measure the cr tree in DIR")
    parser.add_argument("--work", metavar="DIR", help="with --list-memory: keep the stores here and reuse them")
    args = parser.parse_args()
    if args.list_memory:
        list_memory(args.list_memory, args.runs, args.compare_with, args.json_out, args.work)
        return

    from cr.results.store import INDEX_FILE, ResultStore

    tmp = Path(tempfile.mkdtemp(prefix="cr-bench-results-"))
    figures: dict = {"results": args.results, "samples": args.samples}
    try:
        t = time.perf_counter()
        records = list(make_records(args.results, args.samples))
        print(f"generated {len(records)} records in {time.perf_counter() - t:.1f} s", file=sys.stderr)

        # -- inserts ---------------------------------------------------------------------------
        plain = _plain_dump(records, tmp / "plain", fsync=False)
        home = tmp / "home"
        store = ResultStore(home / "results", durable=False)
        t = time.perf_counter()
        for rec in records:
            store.add(rec)
        bulk = time.perf_counter() - t
        d = min(args.durable, len(records))
        plain_sync = _plain_dump(records[:d], tmp / "plain-sync", fsync=True)
        durable_store = ResultStore(tmp / "durable", durable=True)
        t = time.perf_counter()
        for rec in records[:d]:
            durable_store.add(rec)
        durable = time.perf_counter() - t
        durable_store.close()
        figures["insert"] = {
            "store_per_s": len(records) / bulk, "plain_per_s": len(records) / plain, "ratio": bulk / plain,
            "durable_store_per_s": d / durable, "durable_plain_per_s": d / plain_sync, "durable_ratio": durable / plain_sync,
            "store_bytes": _du(home / "results"), "plain_bytes": _du(tmp / "plain"),
        }

        # -- queries through the API ------------------------------------------------------------
        query = {"solution": "sol-0", "backend": "onnxruntime"}
        store.close()
        store = ResultStore(home / "results")
        t = time.perf_counter()
        first = store.list(**query)
        first_s = time.perf_counter() - t
        time.sleep(2.2)  # shards listed within 2 s of a change are listed again: let them settle
        store.list(**query)
        warm = []
        for _ in range(args.runs):
            t = time.perf_counter()
            rows = store.list(**query)
            warm.append(time.perf_counter() - t)
        assert len(rows) == len(first) == min(PER_PAIR, len(records) // len(BACKENDS)), len(rows)
        store.add(next(make_records(1, args.samples, seed=99)))  # a new result: its shard changed
        t = time.perf_counter()
        store.list(**query)
        after_add_s = time.perf_counter() - t
        fresh = ResultStore(home / "results")  # a new process's first call: connection included
        t = time.perf_counter()
        fresh.list(**query)
        fresh_s = time.perf_counter() - t
        fresh.close()
        figures["api"] = {"matches": len(rows), "first_after_inserts_s": first_s, "warm_s": statistics.median(warm),
                          "after_one_add_s": after_add_s, "new_connection_s": fresh_s}

        # -- the command ------------------------------------------------------------------------
        # bytecode cached as a user's Python has it: with PYTHONDONTWRITEBYTECODE inherited (as
        # some shells and CI set it) every command would recompile cr, 4-5x too slow
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(CR_HOME=str(home), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
        cr = [sys.executable, "-m", "cr"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "cr --help (what any command pays)": [sys.executable, "-m", "cr", "--help"],
            "cr results list --solution sol-0 --backend onnxruntime --json":
                cr + ["results", "list", "--solution", "sol-0", "--backend", "onnxruntime", "--json"],
            "cr results list --limit 20": cr + ["results", "list", "--limit", "20"],
            "cr results show UID": cr + ["results", "show", rows[0]["uid"]],
        }
        for cmd in commands.values():
            _timed_run(cmd, env)  # warm the caches, compile bytecode
        times: dict[str, list[float]] = {k: [] for k in commands}
        rng = random.Random(1)
        for _ in range(args.runs):
            order = list(commands)
            rng.shuffle(order)
            for name in order:
                times[name].append(_timed_run(commands[name], env))
        base = statistics.median(times["python -c pass"])
        startup = statistics.median(times["cr --help (what any command pays)"])
        figures["commands"] = {k: {"median_s": statistics.median(v), "ratio": statistics.median(v) / base,
                                   "ratio_to_cr_help": statistics.median(v) / startup} for k, v in times.items()}

        # -- rebuilding the index ---------------------------------------------------------------
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(home / "results" / INDEX_FILE) + suffix).unlink(missing_ok=True)
        store = ResultStore(home / "results")
        t = time.perf_counter()
        store.reindex()
        figures["reindex_from_scratch_s"] = time.perf_counter() - t
        store.close()
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    _report(figures)
    if args.json_out:
        text = json.dumps(figures, indent=2)
        if args.json_out == "-":
            print(text)
        else:
            Path(args.json_out).write_text(text + "\n")


# Runs argv in a child and prints its peak RSS (KiB). Through this small process, because
# Linux carries a process's peak RSS across exec: a child forked straight from this
# benchmark (hundreds of MiB after indexing 100,000 records) would report at least that.
_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1); os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, file=sys.stderr); sys.exit(os.waitstatus_to_exitcode(status))
"""


def _peak_rss(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(peak RSS in MiB, wall s) of cmd run in a child in cwd, its output discarded (a pipe's fate)."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return int(done.stderr.strip().splitlines()[-1]) / 1024, elapsed  # KiB on Linux


def list_memory(sizes: list[int], runs: int, compare_with: str | None, json_out: str | None, work: str | None) -> None:
    from cr.dashboard import sample
    from cr.results.store import ResultStore

    tmp = Path(work) if work else Path(tempfile.mkdtemp(prefix="cr-bench-list-"))
    tmp.mkdir(parents=True, exist_ok=True)
    trees = {"this tree": str(ROOT)}
    if compare_with:
        trees = {"compared tree": str(Path(compare_with).absolute()), **trees}
    figures: dict = {"runs": runs, "sizes": {}}
    try:
        for n in sizes:
            home = tmp / f"home-{n}"
            if not (home / ".complete").exists():
                shutil.rmtree(home, ignore_errors=True)
                t = time.perf_counter()
                sample.write_store(home / "results", n)
                with ResultStore(home / "results", durable=False) as store:
                    assert store.count() == n, "the sample records did not all index"
                (home / ".complete").write_text("", encoding="utf-8")
                print(f"{n:,} results written and indexed in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env.update(CR_HOME=str(home), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
            commands = {"cr --help": ["--help"], "cr results list": ["results", "list"],
                        "cr results list --json": ["results", "list", "--json"]}
            cells = {(tree, name): [] for tree in trees for name in commands}
            for tree, path in trees.items():  # warm the caches, compile bytecode
                env["PYTHONPATH"] = path  # run from tmp: `python -m` puts the working directory first
                _peak_rss([sys.executable, "-m", "cr", "results", "list", "--limit", "1"], env, tmp)
            for _ in range(runs):
                for tree, path in trees.items():
                    for name, args in commands.items():
                        env["PYTHONPATH"] = path
                        cells[(tree, name)].append(_peak_rss([sys.executable, "-m", "cr", *args], env, tmp))
            figures["sizes"][n] = {f"{tree}: {name}": {"peak_rss_mib": statistics.median(v[0] for v in got),
                                                       "wall_s": statistics.median(v[1] for v in got)}
                                   for (tree, name), got in cells.items()}
    finally:
        if not work:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\npeak RSS of a full listing (median of {runs}; output into a pipe)\n")
    print(f"{'':46}" + "".join(f"{n:>12,} results  " for n in figures["sizes"]))
    for key in next(iter(figures["sizes"].values())):
        print(f"{key:46}" + "".join(f"{f[key]['peak_rss_mib']:>8.0f} MiB {f[key]['wall_s']:>6.2f} s"
                                    for f in figures["sizes"].values()))
    if json_out:
        text = json.dumps(figures, indent=2)
        print(text) if json_out == "-" else Path(json_out).write_text(text + "\n")


def _report(f: dict) -> None:
    ins, api, cmds = f["insert"], f["api"], f["commands"]
    print(f"\n{f['results']:,} results, {f['samples']} raw latencies each\n")
    print(f"{'insert':48} {'results/s':>10} {'ratio':>8}")
    print(f"{'  plain JSON files (baseline)':48} {ins['plain_per_s']:10,.0f} {1:8.2f}")
    print(f"{'  store.add, durable=False':48} {ins['store_per_s']:10,.0f} {ins['ratio']:8.2f}")
    print(f"{'  plain JSON files + fsync (baseline)':48} {ins['durable_plain_per_s']:10,.0f} {1:8.2f}")
    print(f"{'  store.add, durable (default)':48} {ins['durable_store_per_s']:10,.0f} {ins['durable_ratio']:8.2f}")
    print(f"  disk: store {ins['store_bytes'] / 2**20:,.0f} MiB (JSON + side files + index), "
          f"plain {ins['plain_bytes'] / 2**20:,.0f} MiB\n")
    ok = "ok" if api["warm_s"] <= TARGET_QUERY_S else "OVER"
    print(f"list(solution=, backend=) -> {api['matches']} results")
    print(f"  warm                          {api['warm_s']:.3f} s   (target <= {TARGET_QUERY_S} s: {ok})")
    print(f"  after one more add            {api['after_one_add_s']:.3f} s   (one shard listed again)")
    print(f"  new connection                {api['new_connection_s']:.3f} s")
    print(f"  first after the bulk inserts  {api['first_after_inserts_s']:.3f} s   (every shard listed)\n")
    print(f"{'command':64} {'median s':>9} "
          f"{'ratio':>7} {'/cr --help':>10}")
    for name, v in cmds.items():
        print(f"  {name:62} {v['median_s']:9.3f} {v['ratio']:7.2f} {v['ratio_to_cr_help']:10.2f}")
    print(f"\nreindex from scratch ({f['results']:,} files): {f['reindex_from_scratch_s']:.1f} s")


if __name__ == "__main__":
    main()
