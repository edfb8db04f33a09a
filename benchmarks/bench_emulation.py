"""Emulated / native latency: the same solution benchmarked natively and in an emulated root.

    python benchmarks/bench_emulation.py RESULTS_DIR [RESULTS_DIR ...]      # a table
    python benchmarks/bench_emulation.py --json ratios.json native/ arm64/ armhf/

Reads stored result records (CR_HOME/results, or what `scripts/arm-root.sh ARCH results DIR`
copied out of a root), groups the benchmark runs that worked by (solution or model, backend,
scenario) and platform, and prints for every emulated platform (platform.emulated
set) the ratio of its p50 and throughput to those of a native platform with the same host
architecture, for the newest run of each. Runs no model itself: make the records first
(scripts/ci-arm.sh does both). An emulated run without a native twin is listed without a ratio.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def records(dirs: list[str]) -> list[dict]:
    out = []
    for d in dirs:
        for path in sorted(Path(d).rglob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("action") == "benchmark" and data.get("status") == "ok":
                out.append(data)
    return out


def _key(rec: dict) -> tuple:
    subject = next((c for c in rec.get("components") or [] if c.get("kind") in ("solution", "model")), {})
    config = rec.get("config") or {}
    backend = (rec.get("backend") or {}).get("name") or config.get("backend")
    return (subject.get("name"), backend, config.get("scenario"))


def ratios(recs: list[dict]) -> list[dict]:
    newest: dict[tuple, dict] = {}
    for rec in recs:
        plat = rec.get("platform") or {}
        k = (_key(rec), plat.get("fingerprint"))
        if k not in newest or (rec.get("ended") or "") > (newest[k].get("ended") or ""):
            newest[k] = rec
    native = {}
    for (key, _), rec in newest.items():
        plat = rec.get("platform") or {}
        if not plat.get("emulated"):
            native.setdefault((key, plat.get("arch")), rec)
    rows = []
    for (key, _), rec in sorted(newest.items(), key=lambda kv: str(kv[0])):
        plat = rec.get("platform") or {}
        if not plat.get("emulated"):
            continue
        base = native.get((key, plat.get("host_arch")))
        p50 = (rec.get("metrics") or {}).get("latency_ns", {}).get("p50")
        tput = (rec.get("metrics") or {}).get("throughput", {}).get("samples_per_s")
        row = {"subject": key[0], "backend": key[1], "scenario": key[2], "emulated_arch": plat.get("arch"),
               "host_arch": plat.get("host_arch"), "p50_ns": p50, "samples_per_s": tput, "uid": rec.get("uid")}
        if base:
            bp50 = base["metrics"]["latency_ns"].get("p50")
            btput = base["metrics"].get("throughput", {}).get("samples_per_s")
            row.update(native_uid=base.get("uid"), native_p50_ns=bp50, native_samples_per_s=btput,
                       p50_ratio=p50 / bp50 if p50 and bp50 else None,
                       throughput_ratio=tput / btput if tput and btput else None)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="result folders (CR_HOME/results or copies of them)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    rows = ratios(records(args.dirs))
    if not rows:
        print("no emulated benchmark runs found in " + ", ".join(args.dirs), file=sys.stderr)
        return 1
    print(f"{'subject':28} {'backend':12} {'scenario':14} {'arch':8} {'p50':>11} {'native p50':>11} {'p50 x':>8} {'tput x':>8}")
    for r in rows:
        ms = lambda ns: f"{ns / 1e6:.3f} ms" if ns else "-"  # noqa: E731
        ratio = lambda v: f"{v:.1f}" if v else "-"  # noqa: E731
        print(f"{r['subject'] or '?':28} {r['backend'] or '?':12} {r['scenario'] or '?':14} {r['emulated_arch'] or '?':8} "
              f"{ms(r['p50_ns']):>11} {ms(r.get('native_p50_ns')):>11} {ratio(r.get('p50_ratio')):>8} "
              f"{ratio(1 / r['throughput_ratio'] if r.get('throughput_ratio') else None):>8}")
    print("p50 x: emulated p50 / native p50; tput x: native throughput / emulated throughput (both: times slower)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
