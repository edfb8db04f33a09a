"""Lines that say what the machine was doing during a benchmark, its energy and memory:
what `cr benchmark` and `cr results show` print under the latencies (record["machine"],
metrics.energy, metrics.memory; written by cr.run.monitor)."""
from __future__ import annotations


def _mib(value) -> str:
    return f"{value / 2**20:.1f} MiB"


def _pct(value) -> str:
    return f"{value * 100:.1f}%"


def rows(record: dict) -> list[list[str]]:
    """[label, text] rows; nothing for a record without these fields (older records)."""
    out = []
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    memory = metrics.get("memory") if isinstance(metrics.get("memory"), dict) else {}
    parts = [f"{name} {_mib(memory[key])}" for name, key in (("peak RSS", "peak_rss_bytes"), ("USS", "uss_bytes"),
                                                            ("PSS", "pss_bytes"), ("GPU", "gpu_bytes"))
             if isinstance(memory.get(key), (int, float))]
    if parts:
        out.append(["memory", ", ".join(parts)])
    en = metrics.get("energy")
    if isinstance(en, dict) and isinstance(en.get("label"), str):
        if en["label"] == "measured" and isinstance(en.get("joules"), (int, float)):
            text = f"{en['joules']:.3f} J over the {en.get('window') or 'run'}"
            if isinstance(en.get("avg_watts"), (int, float)):
                text += f", {en['avg_watts']:.2f} W average"
            if isinstance(en.get("joules_per_sample"), (int, float)):
                text += f", {en['joules_per_sample'] * 1e3:.4g} mJ/sample"
            out.append(["energy", f"{text} (measured: {en.get('source')})"])
        else:
            out.append(["energy", en["label"]])
    machine = record.get("machine")
    if not isinstance(machine, dict):
        return out
    if machine.get("label"):
        out.append(["machine", str(machine["label"])])
        return out
    s = machine.get("summary") if isinstance(machine.get("summary"), dict) else {}
    d = machine.get("during") if isinstance(machine.get("during"), dict) else {}
    cpu = []
    if s.get("governor"):
        cpu.append(f"governor {s['governor']}")
    if isinstance(d.get("freq_mhz_min"), (int, float)) and isinstance(d.get("freq_mhz_max"), (int, float)):
        cpu.append(f"{d['freq_mhz_min']:.0f}-{d['freq_mhz_max']:.0f} MHz")
    if isinstance(s.get("load_avg_start"), (int, float)):
        cpu.append(f"load {s['load_avg_start']:.2f} at start")
    if cpu:
        out.append(["cpu", ", ".join(cpu)])
    if isinstance(s.get("cpu_other_share"), (int, float)):
        text = f"{_pct(s['cpu_other_share'])} of the machine's CPU used by other processes"
        if isinstance(d.get("cpu_child_share"), (int, float)):
            text += f" (the benchmark: {_pct(d['cpu_child_share'])})"
        out.append(["background", text])
    flags = []
    if s.get("throttled") is True:
        reasons = d.get("throttle_reasons") if isinstance(d.get("throttle_reasons"), list) else []
        flags.append("THROTTLED" + (f" ({'; '.join(map(str, reasons))})" if reasons else ""))
    elif s.get("throttled") is False:
        flags.append("not throttled")
    if isinstance(s.get("temp_c_max"), (int, float)):
        flags.append(f"max {s['temp_c_max']:.1f} C")
    if s.get("swap_activity") is True:
        flags.append(f"SWAPPING ({d.get('swap_in_pages')} pages in, {d.get('swap_out_pages')} out)")
    if flags:
        out.append(["thermal", ", ".join(flags)])
    if machine.get("monitor_error"):
        out.append(["monitor", f"stopped early: {machine['monitor_error']}"])
    return out
