"""Result records in the real format (cr/results/record.py), made up: for trying the
dashboard, its tests and its benchmark.

    from cr.dashboard import sample
    rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.PI4, latencies)
    sample.write_store("results/", 100_000)      # 50,000 configurations x (benchmark + validate)

The records carry the fields a real `cr benchmark` / `cr validate` writes (components,
backend info, platform, config, metrics computed from the latencies, pipeline, raw
samples, runtime), with values taken from real runs of lenet-digits on this project's
machines. Nothing here measures anything.
"""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

# A Raspberry Pi 4 as `cr platform --root tests/fixtures/platforms/rpi4-64 --json` describes it.
PI4 = {
    "os": "linux", "distribution": "debian", "distribution_version": "12",
    "distribution_name": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.6.51+rpt-rpi-v8",
    "kernel_version": "#1 SMP PREEMPT Debian 1:6.6.51-1+rpt3 (2024-10-08)", "arch": "aarch64",
    "cpu": {"model": "Cortex-A72", "vendor": "ARM", "cores": 4, "threads": 4,
            "flags": ["fp", "asimd", "evtstrm", "crc32", "cpuid"], "max_mhz": 1800},
    "memory_bytes": 8190640128, "board": "Raspberry Pi 4 Model B", "board_revision": "1.4", "soc": "bcm2711",
    "python": "3.11.2", "python_implementation": "CPython", "python_implementation_version": "3.11.2",
    "libc": "glibc", "libc_version": "2.36", "fingerprint": "8527a3f8aafd9da2",
    "capabilities": ["aarch64", "linux", "neon", "raspberry-pi", "raspberry-pi-4"],
}

# A 2-core x86-64 cloud VM, as this project's machines describe themselves (cr platform --json).
XEON = {
    "os": "linux", "distribution": "debian", "distribution_version": "12",
    "distribution_name": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.18.44-fc-v657",
    "kernel_version": "#1 SMP PREEMPT_DYNAMIC @0", "arch": "x86_64",
    "cpu": {"model": "Intel(R) Xeon(R) Processor", "vendor": "GenuineIntel", "cores": 2, "threads": 2, "flags": [
        "fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce", "cx8", "apic", "sep", "mtrr", "pge", "mca", "cmov",
        "pat", "pse36", "clflush", "mmx", "fxsr", "sse", "sse2", "ss", "ht", "syscall", "nx", "pdpe1gb", "rdtscp",
        "lm", "constant_tsc", "rep_good", "nopl", "xtopology", "nonstop_tsc", "cpuid", "tsc_known_freq", "pni",
        "pclmulqdq", "ssse3", "fma", "cx16", "pcid", "sse4_1", "sse4_2", "x2apic", "movbe", "popcnt",
        "tsc_deadline_timer", "aes", "xsave", "avx", "f16c", "rdrand", "hypervisor", "lahf_lm", "abm",
        "3dnowprefetch", "cpuid_fault", "ssbd", "ibrs", "ibpb", "stibp", "ibrs_enhanced", "fsgsbase", "tsc_adjust",
        "bmi1", "avx2", "smep", "bmi2", "erms", "invpcid", "avx512f", "avx512dq", "rdseed", "adx", "smap",
        "avx512ifma", "clflushopt", "clwb", "avx512cd", "sha_ni", "avx512bw", "avx512vl", "xsaveopt", "xsavec",
        "xgetbv1", "xsaves", "avx_vnni", "avx512_bf16", "wbnoinvd", "arat", "avx512vbmi", "umip", "pku", "ospke",
        "avx512_vbmi2", "gfni", "vaes", "vpclmulqdq", "avx512_vnni", "avx512_bitalg", "avx512_vpopcntdq", "rdpid",
        "bus_lock_detect", "cldemote", "movdiri", "movdir64b", "fsrm", "md_clear", "serialize", "tsxldtrk", "ibt",
        "amx_bf16", "avx512_fp16", "amx_tile", "amx_int8", "flush_l1d", "arch_capabilities"
    ], "max_mhz": 2100},
    "memory_bytes": 25276510208, "python": "3.11.7", "python_implementation": "CPython",
    "python_implementation_version": "3.11.7", "libc": "glibc", "libc_version": "2.36",
    "fingerprint": "0fa452610b89eb98",
    "capabilities": [
        "amx_bf16", "amx_int8", "amx_tile", "avx", "avx2", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx512bw",
        "avx512f", "avx512vl", "avx_vnni", "f16c", "fma", "linux", "sse4_2", "x86_64"
    ],
}

BACKENDS = {
    "onnxruntime": {"entry": "cr.runtime.backends.onnxruntime:OnnxruntimeBackend",
                    "info": {"framework": "onnxruntime", "version": "1.32.0", "providers": ["CPUExecutionProvider"], "device": "CPU"}},
    "torch": {"entry": "cr.runtime.backends.torch:TorchBackend",
              "info": {"framework": "torch", "version": "2.13.0+cpu", "device": "cpu", "threads": 2, "format": "torchscript"}},
    "tflite": {"entry": "cr.runtime.backends.tflite:TfliteBackend",
               "info": {"framework": "tflite", "runtime": "ai-edge-litert", "version": "2.3.0", "device": "cpu", "xnnpack": "default"}},
    "tensorflow": {"entry": "cr.runtime.backends.tensorflow:TensorflowBackend",
                   "info": {"framework": "tensorflow", "version": "2.20.0", "device": "cpu"}},
}
PREPROCESS = [{"op": "scale", "factor": 0.0625}, {"op": "cast", "dtype": "float32"}, {"op": "reshape", "shape": [1, 8, 8]}]


def percentile(sorted_values: list, q: float) -> float:
    """numpy's default percentile (linear interpolation between closest ranks), as the harness uses."""
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def latency_metrics(latencies: list[int], scenario: str = "single-stream", batch_size: int = 1) -> dict:
    """metrics as cr/runtime/actions/benchmark.py reports them, computed from the latencies."""
    s = sorted(latencies)
    n = len(s)
    mean = sum(s) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    lat = {"count": n, "min": s[0], "max": s[-1], "mean": mean, "stdev": stdev}
    for name, q in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99), ("p99.9", 99.9)):
        lat[name] = percentile(s, q)
    lat["iqr"] = percentile(s, 75) - percentile(s, 25)
    duration = sum(s) / 1e9
    noise = lat["iqr"] / lat["p50"] if lat["p50"] else 0.0
    return {
        "scenario": scenario, "validity": "VALID", "invalid_reasons": [], "queries": n, "samples": n * batch_size,
        "samples_per_query": 1, "batch_size": batch_size, "duration_s": duration, "latency_ns": lat,
        "throughput": {"queries_per_s": n / duration, "samples_per_s": n * batch_size / duration},
        "noise": noise, "noisy": noise > 0.1, "peak_rss_bytes": 190_000_000,
    }


def _components(model: str, action: str, version: str = "1.0.0") -> list[dict]:
    return [
        {"ref": f"model:{model}@{version}", "kind": "model", "name": model, "version": version,
         "uid": "c355a40e4d75023b", "repo": "builtin", "sha256": "e49e720ca5ecadb454a671669a0497706b3a1bf49f68aec6bda249bd59aaa3a7"},
        {"ref": "dataset:digits@1.0.0", "kind": "dataset", "name": "digits", "version": "1.0.0",
         "uid": "d41c8e9f2a7b6053", "repo": "builtin", "sha256": "3693f4558b811803d913e4ee79668931b7e215b13f406f9256e7e71057c413d6"},
        {"ref": f"action:{action}@0.1.0", "kind": "action", "name": action, "version": "0.1.0",
         "uid": "4e9d2b7a1c0f3586", "repo": "builtin-actions", "sha256": "832a6e68185f48013694d57cd041a73a162e1d73a09e7e1a4e50b7f7d95c09fd"},
    ]


def _base(action: str, model: str, backend: str, variant: str, precision: str, platform: dict, uid: str, started: str) -> dict:
    b = BACKENDS.get(backend, {"entry": f"cr.runtime.backends.{backend}:Backend", "info": {"framework": backend, "version": "1.0"}})
    return {
        "format": 1, "uid": uid, "action": action, "status": "ok", "started": started, "ended": started,
        "cr_version": "0.1.0", "components": _components(model, action),
        "backend": {"name": backend, "entry": b["entry"], "origin": "distribution reefkit 0.1.0", "options": {}, "info": dict(b["info"])},
        "lock": None, "platform": platform,
        "config": {"backend": backend, "backend_options": {}, "variant": variant, "dataset": "dataset:digits@1.0.0", "split": "test"},
        "inputs": {"provider": "dataset", "dataset": "dataset:digits@1.0.0", "split": "test", "samples": 360},
        "model_file": {"path": f"repo/model/{model}/1.0.0/{model}.{variant}", "package": None, "package_version": None,
                       "sha256": "53e59e919764477d90aec9ef4170702f8764b84656d567866d5c1ad8b5f162ac"},
        "metrics": None,
        "pipeline": {"sha256": "7a8e79192b904be77fbd52d99d1de676e14e5bc3ba4d135b4685404c890bf8a4", "preprocess": PREPROCESS,
                     "postprocess": [{"op": "softmax", "axis": -1}], "variant": variant, "precision": precision},
        "raw": None, "error": None,
        "runtime": {"python": platform.get("python", "3.11.7"), "executable": "/usr/bin/python3", "pid": 4242, "seconds": 4.2},
    }


def benchmark_record(model: str, backend: str, variant: str, precision: str, platform: dict, latencies: list[int], *,
                     uid: str, started: str, scenario: str = "single-stream", **extra) -> dict:
    rec = _base("benchmark", model, backend, variant, precision, platform, uid, started)
    rec["config"] = {"scenario": scenario, "min_duration_s": 10, "min_queries": 1024, "warmup_queries": 100,
                     "samples_per_query": 8, "seed": 0, "input_pool": 16, "timeout_s": 600, "inputs": "auto",
                     "engine": "cr", "include_preprocess": False, **rec["config"]}
    rec["metrics"] = latency_metrics(latencies, scenario)
    rec["raw"] = {"latencies_ns": list(latencies)}
    rec.update(extra)
    return rec


def validate_record(model: str, backend: str, variant: str, precision: str, platform: dict, top1: float, *,
                    uid: str, started: str, expected: float | None = None, samples: int = 360, **extra) -> dict:
    rec = _base("validate", model, backend, variant, precision, platform, uid, started)
    rec["config"] = {"iou_threshold": 0.5, "parity_atol": 0.0001, "timeout_s": 600, **rec["config"]}  # the action's defaults
    expected = top1 if expected is None else expected
    ok = abs(top1 - expected) <= 0.01
    rec["validation"] = {
        "outcome": "PASS" if ok else "FAIL",
        "checks": [{"metric": "top1", "value": top1, "expected": expected, "abs": 0.01, "rel": None, "allowed": 0.01,
                    "diff": top1 - expected, "ok": ok}],
        "task": "classification", "samples": samples, "top1": top1, "top5": min(1.0, top1 + 0.015),
        "misses": [{"id": "5", "label": 5, "predicted": 9}],
    }
    rec.update(extra)
    return rec


def latencies(median_ns: float, count: int, rng: random.Random) -> list[int]:
    """Latencies shaped like real single-stream runs: log-normal body, a few slow outliers."""
    out = []
    for _ in range(count):
        x = median_ns * math.exp(rng.gauss(0.0, 0.12))
        if rng.random() < 0.004:
            x *= rng.uniform(5, 40)
        out.append(int(x))
    return out


def write_store(folder, results: int, *, samples: int = 1024, seed: int = 0, profiles: int = 64,
                side_files: bool = True) -> int:
    """Write `results` record files (half benchmark, half validate; one pair per configuration).

    Fast enough for 100,000 files (seconds): a few dozen records are serialised once
    and copied with their model name, uid and time changed. Each file is indented like
    the files cr writes, and a benchmark record's raw latencies lie beside it in
    <uid>.latencies.i64 as the results store keeps them (side_files=False: inline in the
    JSON, the shape of a record written by hand or by an older cr). Returns the number of
    record files written.
    """
    from ..results.latencies import SIDE_SUFFIX, encode, side_raw

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    platforms = [XEON, PI4]
    combos = [("onnxruntime", "onnx", "fp32", 1.0), ("torch", "torchscript", "fp32", 2.4), ("tflite", "tflite", "fp32", 0.6),
              ("tflite", "tflite-int8", "int8", 0.9)]
    templates = []
    for i in range(profiles):
        backend, variant, precision, factor = combos[i % len(combos)]
        platform = platforms[(i // len(combos)) % len(platforms)]
        median = 20_000 * factor * (12 if platform is PI4 else 1) * rng.uniform(0.7, 1.4)
        bench = benchmark_record("@@MODEL@@", backend, variant, precision, platform, latencies(median, samples, rng),
                                 uid="@@UID@@", started="@@TIME@@")
        blob = None
        if side_files:
            blob = encode(bench["raw"]["latencies_ns"])
            bench["raw"] = side_raw(blob, "@@UID@@" + SIDE_SUFFIX)
        top1 = round(rng.uniform(0.90, 0.99) - (0.01 if precision == "int8" else 0.0), 4)
        val = validate_record("@@MODEL@@", backend, variant, precision, platform, top1, uid="@@UID@@", started="@@TIME@@")
        templates.append((json.dumps(bench, indent=2) + "\n", json.dumps(val, indent=2) + "\n", blob))
    written = 0
    configs = (results + 1) // 2
    for c in range(configs):
        pairs = len(combos) * len(platforms)
        bench_text, val_text, blob = templates[(c % pairs) + pairs * ((c // pairs) % (len(templates) // pairs))]
        # configuration c: model c // 8 with the c % 8-th backend/variant/platform combination
        model = f"model-{c // (len(combos) * len(platforms)):05d}"
        for k, text in enumerate((bench_text, val_text)):
            if written == results:
                break
            uid = f"{rng.getrandbits(64):016x}"
            when = f"2026-{1 + c % 12:02d}-{1 + c % 28:02d}T{c % 24:02d}:{c % 60:02d}:{k:02d}.000Z"
            data = text.replace("@@MODEL@@", model).replace("@@UID@@", uid).replace("@@TIME@@", when)
            sub = folder / uid[:2]
            if not sub.is_dir():
                sub.mkdir()
            if k == 0 and blob is not None:
                (sub / f"{uid}{SIDE_SUFFIX}").write_bytes(blob)
            (sub / f"{uid}.json").write_text(data, encoding="utf-8")
            written += 1
    return written
