"""Result records made for the results store tests."""
from __future__ import annotations

import random
import sys
import zlib
from array import array


def latencies(seed: int, n: int = 1000, base_ns: float = 100_000.0) -> array:
    """Lognormal latencies (the usual shape: a floor and a right tail), seeded."""
    rng = random.Random(seed)
    return array("q", (int(base_ns * rng.lognormvariate(0.0, 0.25)) for _ in range(n)))


def _metrics(values: array) -> dict:
    import statistics

    from cr.results.significance import quantile

    s = sorted(values)
    lat = {"count": len(s), "min": s[0], "max": s[-1], "mean": statistics.fmean(s), "stdev": statistics.stdev(s)}
    for name, q in (("p50", .5), ("p90", .9), ("p95", .95), ("p99", .99), ("p99.9", .999)):
        lat[name] = quantile(s, q)
    lat["iqr"] = quantile(s, .75) - quantile(s, .25)
    seconds = sum(s) / 1e9
    return {"scenario": "single-stream", "validity": "VALID", "invalid_reasons": [], "queries": len(s), "samples": len(s),
            "samples_per_query": 1, "batch_size": 1, "duration_s": seconds, "latency_ns": lat,
            "throughput": {"queries_per_s": len(s) / seconds, "samples_per_s": len(s) / seconds},
            "noise": lat["iqr"] / lat["p50"], "noisy": lat["iqr"] / lat["p50"] > 0.1, "peak_rss_bytes": 150 << 20}


def make_record(uid: str, *, action: str = "benchmark", model: str = "lenet-digits", solution: str | None = None,
                backend: str = "onnxruntime", variant: str = "onnx", started: str = "2026-03-01T10:00:00.000Z",
                values: array | None = None, status: str = "ok", platform: dict | None = None,
                top1: float | None = None) -> dict:
    """A complete record built with cr.results.record.new/complete, as `cr benchmark` makes it."""
    from cr.results import record

    def component(kind, name, version="1.0.0"):
        return {"ref": f"{kind}:{name}@{version}", "kind": kind, "name": name, "version": version,
                "uid": f"{zlib.crc32(f'{kind}:{name}'.encode()):016x}", "repo": "builtin", "sha256": "ab" * 32}

    components = ([component("solution", solution)] if solution else []) + [
        component("model", model), component("dataset", "digits"), component("action", action, "0.1.0")]
    backend_entry = {"name": backend, "entry": f"cr.runtime.backends.{backend}:Backend", "origin": "distribution reefkit 0.1.0",
                     "options": {}, "info": None}
    config = {"scenario": "single-stream", "min_queries": 100, "seed": 0, "backend": backend, "variant": variant}
    rec = record.new(action, components, backend_entry, config, None, started)
    rec["uid"] = uid
    result = {"status": status, "error": None if status == "ok" else {"kind": "crashed", "message": "the runtime crashed", "hint": None},
              "pipeline": {"sha256": "cd" * 32, "preprocess": [], "postprocess": [], "variant": variant, "precision": "fp32"},
              "runtime": {"python": "3.11.7", "executable": sys.executable, "pid": 1, "seconds": 1.0},
              "backend_info": {"framework": backend, "version": "1.0"}}
    if action == "benchmark" and status == "ok":
        values = values if values is not None else latencies(int(uid, 16) % 1000, n=200)
        result["metrics"] = _metrics(values)
    else:
        values = None
    if top1 is not None:
        result["validation"] = {"outcome": "PASS", "checks": [], "task": "classification", "samples": 360, "top1": top1, "top5": 1.0}
    record.complete(rec, result, values)
    if platform is not None:
        rec["platform"] = platform
    return rec


def uid_of(n: int, group: int = 0) -> str:
    """A deterministic uid: the group's two hex digits (its shard), then n, scrambled."""
    return f"{group:02x}{(n * 0x9E3779B1) & 0xFFFFFFFF:08x}{n:06x}"
