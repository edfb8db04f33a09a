"""Image size and build time of `cr export solution` for lenet-digits-onnxruntime, and the
single-stream p50 inside the image vs native on the same machine (interleaved rounds).

    sudo .venv/bin/python benchmarks/bench_image.py                 # 5 rounds of 3 s each
    sudo .venv/bin/python benchmarks/bench_image.py --rounds 1 --seconds 0.3   # tiny
    sudo .venv/bin/python benchmarks/bench_image.py --batch-size 512 --threads 1 --rounds 9 --seconds 5 --no-rebuild
                                       # a p50 in ms (lenet's batch-1 p50 is ~10 us: noise-bound)
    sudo .venv/bin/python benchmarks/bench_image.py --arch arm64   # size and build time under QEMU

--arch arm64 (x86_64 host): the image is exported inside the arm64 root of
scripts/arm-root.sh from the lock its `job` made (docs/containers.md), unpacked here and
its default command (`cr benchmark solution`) run once under QEMU with no network; no
ratio against native (the latency is the emulator's).

Builds run in a fresh CR_HOME after `cr init solution`: the first build (base root cached,
or built first and timed apart), then a second build into another directory, whose digest
must be the same (reproducibility). The container side runs the unpacked image with
unshare + chroot and no network (cr.export.oci.sandbox_command), as podman would. Each
round runs native then container (alternating which goes first) and reads the p50 from
the record each prints; the figure is the median over rounds of container/native.
Without root it prints the build figures it can and says why it skipped the rest.
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

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
SOLUTION = "lenet-digits-onnxruntime"


def cr(*args, env, check=True, timeout=1800):
    cmd = [str(Path(sys.executable).with_name("cr")), *args]
    if not Path(cmd[0]).exists():
        cmd = [sys.executable, "-m", "cr", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    return r


def p50_of(stdout: str) -> float:
    data = json.loads(stdout)
    records = data if isinstance(data, list) else [data]
    for rec in records:
        if (rec.get("metrics") or {}).get("latency_ns"):
            return rec["metrics"]["latency_ns"]["p50"]
    raise SystemExit(f"no latency in {stdout[:300]}")


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free interval for the median of values: the k-th smallest and k-th
    largest, k the largest rank whose binomial(n, 1/2) tail stays within (1 - level) / 2.
    None when there are too few values for one (n < 6 at 95%)."""
    from math import comb

    v, n = sorted(values), len(values)
    tail, k = 0.0, 0
    for i in range(n + 1):
        tail += comb(n, i) / 2 ** n
        if tail > (1 - level) / 2:
            k = i
            break
    return (v[k - 1], v[n - k]) if k >= 1 else None


def arm64(out: dict) -> None:
    """The arm64 image's build figures: export inside the emulated arm64 root, unpack, one run."""
    from cr.export import oci

    arm_root = Path(os.environ.get("ARM_ROOTS", "/var/tmp/reefkit-arm-roots")) / "arm64"
    py, src, img = "/opt/reefkit/src/.venv/bin/python", "/opt/reefkit/image-src", "/tmp/reefkit-arm64-oci"
    if os.geteuid() != 0 or not (arm_root / py.lstrip("/")).exists():
        sys.exit(f"--arch arm64 needs root and the Arm CI root with its job run at {arm_root} (sudo scripts/arm-root.sh arm64 build && ... job)")
    arm = [str(HERE / "scripts" / "arm-root.sh"), "arm64"]
    state_before = (arm_root.parent / ".binfmt-state").exists()
    work = Path(tempfile.mkdtemp(prefix="bench-image-arm64-", dir="/var/tmp"))
    try:
        t0 = time.monotonic()
        base = subprocess.run([str(HERE / "scripts" / "image-root.sh"), "arm64"], capture_output=True, text=True, check=True)
        out["base_root_s"] = round(time.monotonic() - t0, 2)
        base_root = Path(base.stdout.strip().splitlines()[-1])
        bind = f"/mnt/{base_root.name}"  # its name is in the base layer's comment: the same as a host export's
        shutil.rmtree(arm_root / src.lstrip("/"), ignore_errors=True)
        (arm_root / src.lstrip("/")).mkdir(parents=True)
        subprocess.run(f"git ls-files -co --exclude-standard -z | tar --null --no-recursion -T - -cf - | tar -xf - -C {arm_root / src.lstrip('/')}",
                       shell=True, cwd=HERE, check=True)
        (arm_root / bind.lstrip("/")).mkdir(parents=True, exist_ok=True)
        shutil.rmtree(arm_root / img.lstrip("/"), ignore_errors=True)
        subprocess.run(["mount", "--bind", str(base_root), str(arm_root / bind.lstrip("/"))], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(arm_root / bind.lstrip("/"))], check=True)
            t0 = time.monotonic()
            r = subprocess.run([*arm, "run", "--", "sh", "-c", f"cd {src} && REEFKIT_IMAGE_ROOT={bind} {py} -m cr export solution {SOLUTION} --oci {img} --arch arm64 --json"],
                               capture_output=True, text=True)
            out["build_s"] = round(time.monotonic() - t0, 2)
        finally:
            subprocess.run(["umount", str(arm_root / bind.lstrip("/"))], capture_output=True)
            shutil.rmtree(arm_root / src.lstrip("/"), ignore_errors=True)
        if r.returncode != 0:
            sys.exit(f"export inside the arm64 root failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        s = json.loads(r.stdout[r.stdout.index("{"):])
        out.update(export_s=s["seconds"], digest=s["digest"], compressed_bytes=s["size"],
                   layers=[{"comment": l["comment"][:60], "bytes": l["size"]} for l in s["layers"]])
        shutil.move(str(arm_root / img.lstrip("/")), work / "oci")
        root = work / "root"
        root.mkdir()
        t0 = time.monotonic()
        config = oci.unpack(work / "oci", root)
        out["unpack_s"] = round(time.monotonic() - t0, 2)
        out["unpacked_bytes"] = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())
        t0 = time.monotonic()
        run = subprocess.run(oci.sandbox_command(root, config, env={"REEFKIT_IMAGE_DIGEST": s["digest"]}), capture_output=True, text=True)
        out["run_s"] = round(time.monotonic() - t0, 2)
        if run.returncode != 0:
            sys.exit(f"inside the arm64 image: {run.stdout}\n{run.stderr}")
        recs = [json.loads(p.read_text()) for p in (root / "var" / "lib" / "reefkit" / "results").glob("*/*.json")]
        out["records"] = [{"action": x["action"], "arch": x["platform"]["arch"], "digest_matches": x["image"]["digest"] == s["digest"],
                           "p50_ns": ((x.get("metrics") or {}).get("latency_ns") or {}).get("p50")} for x in recs]
    finally:
        if not state_before:
            subprocess.run([*arm, "binfmt-restore"], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        if "build_s" in out and "layers" in out:
            mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
            print(f"arm64 image of {SOLUTION} (QEMU): {mib(out['compressed_bytes'])} compressed"
                  + (f" ({mib(out['unpacked_bytes'])} unpacked)" if "unpacked_bytes" in out else "")
                  + f"; export {out['build_s']} s wall ({out['export_s']} s in cr); base root {out['base_root_s']} s")
            for l in out["layers"]:
                print(f"  {mib(l['bytes']):>10}  {l['comment']}")
        if "run_s" in out:
            print(f"unpack {out['unpack_s']} s; cr benchmark solution inside (no network) {out['run_s']} s")
            for x in out["records"]:
                print(f"  {x['action']:<10} arch {x['arch']}  digest named: {x['digest_matches']}  p50 {x['p50_ns']} ns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0, help="--min-duration of each single-stream run")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="samples per query (a larger batch gives a p50 in ms, which a loaded machine disturbs less)")
    ap.add_argument("--threads", type=int, default=None, help="the backend's threads on both sides")
    ap.add_argument("--no-rebuild", action="store_true", help="skip the second build (the reproducibility check)")
    ap.add_argument("--arch", choices=("amd64", "arm64"), default="amd64", help="arm64: exported and run under QEMU (see above)")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args()
    if a.arch == "arm64":
        out = {"solution": SOLUTION, "arch": "arm64", "machine": f"{os.uname().machine}, {os.cpu_count()} cores (shared), QEMU user-mode"}
        try:
            arm64(out)
        finally:
            if a.json:
                Path(a.json).write_text(json.dumps(out, indent=1))
        return

    from cr.export import oci

    work = Path(tempfile.mkdtemp(prefix="bench-image-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CR_HOME"] = os.environ.get("CR_HOME") or str(work / "home")
    out = {"solution": SOLUTION, "machine": f"{os.uname().machine}, {os.cpu_count()} cores (shared)"}
    try:
        cr("init", "solution", SOLUTION, env=env)
        if os.geteuid() != 0:
            print("container figures skipped: building and running the image root needs root")
            out["skipped"] = "not root"
            return
        t0 = time.monotonic()
        base = subprocess.run([str(HERE / "scripts" / "image-root.sh"), "amd64"], capture_output=True, text=True)
        out["base_root_s"] = round(time.monotonic() - t0, 2)  # ~0 when cached
        if base.returncode != 0:
            print(f"container figures skipped: the base root did not build: {base.stderr.strip()[-300:]}")
            out["skipped"] = "base root"
            return
        builds = []
        for name in ("a",) if a.no_rebuild else ("a", "b"):
            t0 = time.monotonic()
            r = cr("export", "solution", SOLUTION, "--oci", str(work / name), "--json", env=env)
            builds.append((time.monotonic() - t0, json.loads(r.stdout)))
        (t1, s1), (t2, s2) = builds[0], builds[-1]
        out.update(build_s=round(t1, 2), digest=s1["digest"], compressed_bytes=s1["size"],
                   layers=[{"comment": l["comment"][:60], "bytes": l["size"]} for l in s1["layers"]])
        if len(builds) == 2:
            out.update(rebuild_s=round(t2, 2), reproducible=s1["digest"] == s2["digest"])
            shutil.rmtree(work / "b")
        root = work / "root"
        root.mkdir()
        t0 = time.monotonic()
        config = oci.unpack(work / "a", root)
        out["unpack_s"] = round(time.monotonic() - t0, 2)
        out["unpacked_bytes"] = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())
        args = ["benchmark", "solution", SOLUTION, "--scenario", "single-stream", "--min-duration", str(a.seconds), "--json"]
        for flag, value in (("--batch-size", a.batch_size), ("--threads", a.threads)):
            if value is not None:
                args[-1:-1] = [flag, str(value)]
        out["args"] = args
        # one untimed run on each side: the first run inside detects and resolves
        cr(*args, env=env)
        subprocess.run(oci.sandbox_command(root, config, args=args), capture_output=True, text=True, check=True)
        native, inside = [], []
        for i in range(a.rounds):
            order = ("native", "container") if i % 2 == 0 else ("container", "native")
            for side in order:
                if side == "native":
                    native.append(p50_of(cr(*args, env=env).stdout))
                else:
                    run = subprocess.run(oci.sandbox_command(root, config, args=args, env={"REEFKIT_IMAGE_DIGEST": s1["digest"]}),
                                         capture_output=True, text=True)
                    if run.returncode != 0:
                        sys.exit(f"inside the image: {run.stdout}\n{run.stderr}")
                    inside.append(p50_of(run.stdout))
        ratios = [c / n for c, n in zip(inside, native)]
        out.update(native_p50_ns=native, container_p50_ns=inside, ratio_median=statistics.median(ratios), ratios=ratios)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if "build_s" in out:
            mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
            again = (f"rebuild {out['rebuild_s']} s, same digest: {out['reproducible']}" if "rebuild_s" in out
                     else "no rebuild (--no-rebuild)")
            print(f"image of {SOLUTION}: {mib(out['compressed_bytes'])} compressed ({mib(out['unpacked_bytes'])} unpacked) "
                  f"in {out['build_s']} s; {again}; base root {out['base_root_s']} s")
            for l in out["layers"]:
                print(f"  {mib(l['bytes']):>10}  {l['comment']}")
        if "ratio_median" in out:
            print(f"single-stream p50, container / native, median of {a.rounds} interleaved rounds: {out['ratio_median']:.3f} "
                  f"(native {statistics.median(out['native_p50_ns']) / 1e3:.1f} us, container {statistics.median(out['container_p50_ns']) / 1e3:.1f} us)")
            r = sorted(out["ratios"])
            print(f"  ratios {', '.join(f'{x:.3f}' for x in out['ratios'])}; spread {r[0]:.3f}-{r[-1]:.3f}, "
                  f"middle half {r[len(r) // 4]:.3f}-{r[(3 * len(r)) // 4]:.3f}")
            ci = median_interval(r)
            if ci:
                print(f"  95% interval of the median ratio (order statistics, no distribution assumed): {ci[0]:.3f}-{ci[1]:.3f}; "
                      f"within 3%: {'yes' if 0.97 <= ci[0] and ci[1] <= 1.03 else 'not slower by more than 3%' if ci[1] <= 1.03 else 'not shown'}")
        if a.json:
            Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
