"""The machine's state while something runs: pure readers over a Source (this host or a
captured root, cr.platform.sources), so every reading is tested from files of real devices.

    from cr.platform.sources import CapturedSource, HostSource
    from cr.platform import state
    snap = state.snapshot(HostSource(timeout=2.0))   # governor, frequencies, load, memory, thermal, throttling
    state.cpu_times(src), state.process_times(src, pid), state.smaps_rollup(src, pid)

A snapshot is a JSON-ready dict; anything that cannot be read is the string "unknown",
never an exception. Sections that only some machines have ("rpi", "jetson", "nvidia")
are present where the machine shows signs of being one (a tool on PATH, a captured
output, the Tegra release file) and hold "unknown" in place of what did not answer.

Tools (vcgencmd, nvpmodel, nvidia-smi) run through the Source, which kills them after its
timeout: a hanging tool is an "unknown" reading, and a live source does not run it again.
Captured outputs are read from commands/<name>.txt (names: TOOL_CAPTURES).
"""
from __future__ import annotations

import re

from .sources import Source

UNKNOWN = "unknown"
_CPU = "/sys/devices/system/cpu"
_THERMAL = "/sys/class/thermal"
_DEVFREQ = "/sys/class/devfreq"

# What each tool is asked, and the capture file (commands/<name>.txt) that holds its output.
TOOL_CAPTURES = {
    "vcgencmd-get_throttled": ["vcgencmd", "get_throttled"],
    "vcgencmd-measure_temp": ["vcgencmd", "measure_temp"],
    "vcgencmd-pmic_read_adc": ["vcgencmd", "pmic_read_adc"],
    "nvpmodel-q": ["nvpmodel", "-q"],
    "nvidia-smi-state": ["nvidia-smi", "--query-gpu=index,clocks.sm,clocks.mem,clocks.max.sm,power.draw,power.limit,"
                         "temperature.gpu,clocks_throttle_reasons.active,memory.used,pstate",
                         "--format=csv,noheader,nounits"],
    "nvidia-smi-apps": ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
}

# Raspberry Pi firmware's get_throttled bits (now: 0-3, since boot: 16-19).
_RPI_FLAGS = {0: "under-voltage", 1: "arm frequency capped", 2: "throttled", 3: "soft temperature limit"}
# NVML clock event (throttle) reasons; the ones that mean the GPU was slowed against its will.
_GPU_REASONS = {
    0x1: "gpu idle", 0x2: "applications clocks setting", 0x4: "sw power cap", 0x8: "hw slowdown",
    0x10: "sync boost", 0x20: "sw thermal slowdown", 0x40: "hw thermal slowdown",
    0x80: "hw power brake slowdown", 0x100: "display clock setting",
}
_GPU_THROTTLING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def tool(source: Source, name: str) -> str | None:
    return source.tool(name, TOOL_CAPTURES[name])


def _hung(source: Source, program: str) -> bool:
    """Whether a live source killed program for outliving its timeout (it exists, but said nothing)."""
    return program in (getattr(source, "timed_out", None) or ())


def _num(text: str | None, scale: float = 1.0) -> float | None:
    try:
        return float(str(text).strip()) * scale
    except (TypeError, ValueError):
        return None


def _or_unknown(value):
    return UNKNOWN if value is None else value


# -- CPU ----------------------------------------------------------------------------------

def cpu_ids(source: Source) -> list[int]:
    return sorted(int(n[3:]) for n in source.listdir(_CPU) if re.fullmatch(r"cpu\d+", n))


def cpu_freqs_mhz(source: Source, cpus: list[int]) -> list[float | None]:
    """Current frequency of each cpu (MHz; None where unreadable): the per-sample reading."""
    return [_num(source.read(f"{_CPU}/cpu{n}/cpufreq/scaling_cur_freq"), 1e-3) for n in cpus]


def cpus(source: Source) -> list[dict] | str:
    """Governor and current/min/max frequency (MHz) of each core, or "unknown" (no cpufreq here)."""
    out = []
    for n in cpu_ids(source):
        base = f"{_CPU}/cpu{n}/cpufreq"
        governor = source.read(f"{base}/scaling_governor")
        entry = {
            "cpu": n,
            "governor": governor.strip() if governor and governor.strip() else UNKNOWN,
            "cur_mhz": _or_unknown(_num(source.read(f"{base}/scaling_cur_freq"), 1e-3)),
            "min_mhz": _or_unknown(_num(source.read(f"{base}/scaling_min_freq"), 1e-3)),
            "max_mhz": _or_unknown(_num(source.read(f"{base}/scaling_max_freq"), 1e-3)),
        }
        if any(entry[k] != UNKNOWN for k in ("governor", "cur_mhz", "min_mhz", "max_mhz")):
            out.append(entry)
    return out or UNKNOWN


def _ranges(numbers: list[int]) -> str:
    parts, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            parts.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ",".join(parts)


def governor_summary(per_cpu) -> str | None:
    """One governor, "mixed: performance (0-3), powersave (4-7)", or None when none is known."""
    if not isinstance(per_cpu, list):
        return None
    by: dict[str, list[int]] = {}
    for c in per_cpu:
        if c.get("governor") not in (None, UNKNOWN):
            by.setdefault(c["governor"], []).append(c["cpu"])
    if not by:
        return None
    if len(by) == 1:
        return next(iter(by))
    return "mixed: " + ", ".join(f"{g} ({_ranges(sorted(ids))})" for g, ids in sorted(by.items()))


def cpu_times(source: Source) -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs together since boot, from /proc/stat, or None.

    busy excludes idle and iowait; guest time is already inside user and nice.
    """
    text = source.read("/proc/stat")
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("cpu "):
            try:
                values = [int(v) for v in line.split()[1:]]
            except ValueError:
                return None
            if len(values) < 4:
                return None
            base = values[:8]
            total = sum(base)
            idle = base[3] + (base[4] if len(base) > 4 else 0)
            return total - idle, total
    return None


def process_times(source: Source, pid: int, children: bool = True) -> int | None:
    """utime+stime(+cutime+cstime) of a process in clock ticks, its threads included and,
    with children, its waited-for children too, from /proc/<pid>/stat; None once it is gone."""
    text = source.read(f"/proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    try:
        return sum(int(fields[i]) for i in ((11, 12, 13, 14) if children else (11, 12)))
    except (IndexError, ValueError):
        return None


def load_avg(source: Source) -> list[float] | str:
    text = source.read("/proc/loadavg")
    try:
        return [float(v) for v in (text or "").split()[:3]] if text and len(text.split()) >= 3 else UNKNOWN
    except ValueError:
        return UNKNOWN


# -- memory -------------------------------------------------------------------------------

def _kib_fields(text: str | None) -> dict[str, int]:
    out = {}
    for line in (text or "").splitlines():
        m = re.match(r"^([A-Za-z_()]+):\s+(\d+)\s*kB", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * 1024
    return out


def memory(source: Source) -> dict:
    info = _kib_fields(source.read("/proc/meminfo"))
    swap = info["SwapTotal"] - info["SwapFree"] if "SwapTotal" in info and "SwapFree" in info else None
    return {"mem_available_bytes": _or_unknown(info.get("MemAvailable")), "swap_used_bytes": _or_unknown(swap)}


def swap_pages(source: Source) -> tuple[int, int] | None:
    """(pages swapped in, pages swapped out) since boot, from /proc/vmstat."""
    found = {}
    for line in (source.read("/proc/vmstat") or "").splitlines():
        name, _, value = line.partition(" ")
        if name in ("pswpin", "pswpout"):
            try:
                found[name] = int(value)
            except ValueError:
                return None
    return (found["pswpin"], found["pswpout"]) if len(found) == 2 else None


def smaps_rollup(source: Source, pid: int) -> dict | None:
    """{rss_bytes, pss_bytes, uss_bytes} of a process (/proc/<pid>/smaps_rollup, Linux >= 4.14),
    with peak_rss_bytes from /proc/<pid>/status VmHWM; None once it is gone."""
    fields = _kib_fields(source.read(f"/proc/{pid}/smaps_rollup"))
    status = _kib_fields(source.read(f"/proc/{pid}/status"))
    if not fields and not status:
        return None
    private = [fields[k] for k in ("Private_Clean", "Private_Dirty") if k in fields]
    return {
        "rss_bytes": fields.get("Rss", status.get("VmRSS")),
        "pss_bytes": fields.get("Pss"),
        "uss_bytes": sum(private) if len(private) == 2 else None,
        "peak_rss_bytes": status.get("VmHWM"),
    }


# -- thermal and throttling ---------------------------------------------------------------

def thermal_zones(source: Source) -> list[dict] | str:
    """[{zone, type, temp_c}] of /sys/class/thermal; "unknown" where there is none."""
    zones = []
    for name in source.listdir(_THERMAL):
        if not name.startswith("thermal_zone"):
            continue
        kind = source.read(f"{_THERMAL}/{name}/type")
        temp = _num(source.read(f"{_THERMAL}/{name}/temp"), 1e-3)
        zones.append({"zone": name, "type": kind.strip() if kind and kind.strip() else UNKNOWN,
                      "temp_c": UNKNOWN if temp is None else round(temp, 3)})
    return zones or UNKNOWN


def temps_c(source: Source, zones: list[str]) -> list[float]:
    """The readable temperatures (°C) of the given zones: the per-sample reading."""
    out = []
    for name in zones:
        temp = _num(source.read(f"{_THERMAL}/{name}/temp"), 1e-3)
        if temp is not None:
            out.append(temp)
    return out


def rpi_throttled(text: str | None) -> dict | str:
    """`vcgencmd get_throttled` ("throttled=0x50005") as flags now and since boot."""
    m = re.search(r"throttled=(0x[0-9a-fA-F]+|\d+)", text or "")
    if not m:
        return UNKNOWN
    bits = int(m.group(1), 0)
    return {
        "raw": m.group(1),
        "now": [name for bit, name in _RPI_FLAGS.items() if bits & (1 << bit)],
        "since_boot": [name for bit, name in _RPI_FLAGS.items() if bits & (1 << (bit + 16))],
    }


def rpi_temp_c(text: str | None) -> float | str:
    m = re.search(r"temp=([-\d.]+)", text or "")
    return float(m.group(1)) if m else UNKNOWN


def rpi(source: Source) -> dict | None:
    """Firmware throttling flags and SoC temperature; None when this is not a Raspberry Pi."""
    throttled_text = tool(source, "vcgencmd-get_throttled")
    if throttled_text is None and not _hung(source, "vcgencmd") and \
            "Raspberry Pi" not in (source.read("/proc/device-tree/model") or ""):
        return None
    return {"throttled": rpi_throttled(throttled_text), "temp_c": rpi_temp_c(tool(source, "vcgencmd-measure_temp"))}


def nvpmodel(text: str | None) -> dict | str:
    """`nvpmodel -q`: "NV Power Mode: MAXN" then the mode id."""
    m = re.search(r"NV Power Mode:\s*(.+)", text or "")
    if not m:
        return UNKNOWN
    mode_id = re.search(r"^\s*(\d+)\s*$", text[m.end():], re.MULTILINE)
    return {"mode": m.group(1).strip(), "id": int(mode_id.group(1)) if mode_id else UNKNOWN}


def devfreq(source: Source) -> list[dict] | str:
    """Clocks of devfreq devices (the Jetson GPU: 17000000.ga10b), MHz."""
    out = []
    for name in source.listdir(_DEVFREQ):
        base = f"{_DEVFREQ}/{name}"
        vals = {k: _num(source.read(f"{base}/{k}_freq"), 1e-6) for k in ("cur", "min", "max")}
        if any(v is not None for v in vals.values()):
            out.append({"device": name, **{f"{k}_mhz": _or_unknown(v) for k, v in vals.items()}})
    return out or UNKNOWN


def jetson(source: Source) -> dict | None:
    """Power mode and devfreq clocks; None when this is not a Jetson (no Tegra release file)."""
    if not source.exists("/etc/nv_tegra_release"):
        return None
    return {"nvpmodel": nvpmodel(tool(source, "nvpmodel-q")), "clocks": devfreq(source)}


def nvidia_state(text: str | None) -> list[dict] | str:
    """Lines of nvidia-smi-state's query: clocks, power, temperature, throttle reasons per GPU."""
    gpus = []
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 10 or not cells[0].isdigit():
            continue
        num = lambda i, scale=1.0: _or_unknown(_num(cells[i], scale))  # noqa: E731 ("[N/A]" -> unknown)
        try:
            reasons = int(cells[7], 16)
        except ValueError:
            reasons = None
        gpus.append({
            "index": int(cells[0]), "sm_mhz": num(1), "mem_mhz": num(2), "sm_max_mhz": num(3),
            "power_w": num(4), "power_limit_w": num(5), "temp_c": num(6),
            "throttle_reasons": UNKNOWN if reasons is None else [n for b, n in _GPU_REASONS.items() if reasons & b],
            "throttled": UNKNOWN if reasons is None else bool(reasons & _GPU_THROTTLING),
            "slowdowns": UNKNOWN if reasons is None else [n for b, n in _GPU_REASONS.items() if reasons & b & _GPU_THROTTLING],
            "memory_used_bytes": int(num(8, 2**20)) if num(8) != UNKNOWN else UNKNOWN, "pstate": cells[9] or UNKNOWN,
        })
    return gpus or UNKNOWN


def nvidia_app_memory(text: str | None, pids: set[int]) -> int | None:
    """GPU memory (bytes) used by the given processes, from nvidia-smi-apps; None if none is listed."""
    total, seen = 0, False
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 2 and cells[0].isdigit() and int(cells[0]) in pids:
            used = _num(cells[1], 2**20)
            if used is not None:
                total, seen = total + int(used), True
    return total if seen else None


def nvidia(source: Source) -> list[dict] | str | None:
    """Per-GPU state from nvidia-smi; None when there is no NVIDIA driver nor nvidia-smi."""
    text = tool(source, "nvidia-smi-state")
    if text is None and not _hung(source, "nvidia-smi") and not source.exists("/proc/driver/nvidia/version"):
        return None
    return nvidia_state(text)


# -- the snapshot -------------------------------------------------------------------------

def throttled(snap: dict) -> bool | None:
    """Whether anything in a snapshot says the machine is being slowed now (None: nothing says)."""
    verdicts = []
    pi = snap.get("rpi")
    if isinstance(pi, dict) and isinstance(pi.get("throttled"), dict):
        verdicts.append(bool(pi["throttled"]["now"]))
    if isinstance(snap.get("nvidia"), list):
        verdicts += [g["throttled"] for g in snap["nvidia"] if isinstance(g.get("throttled"), bool)]
    return any(verdicts) if verdicts else None


def max_temp_c(snap: dict) -> float | None:
    temps = [z["temp_c"] for z in snap.get("thermal") or [] if isinstance(z, dict) and isinstance(z.get("temp_c"), float)]
    pi = snap.get("rpi")
    if isinstance(pi, dict) and isinstance(pi.get("temp_c"), float):
        temps.append(pi["temp_c"])
    if isinstance(snap.get("nvidia"), list):
        temps += [g["temp_c"] for g in snap["nvidia"] if isinstance(g.get("temp_c"), float)]
    return max(temps) if temps else None


def snapshot(source: Source) -> dict:
    """The machine's state now: every field a value or "unknown"."""
    per_cpu = cpus(source)
    swap = swap_pages(source)
    snap = {
        "cpus": per_cpu,
        "governor": _or_unknown(governor_summary(per_cpu)),
        "load_avg": load_avg(source),
        **memory(source),
        "swap_in_pages": UNKNOWN if swap is None else swap[0],
        "swap_out_pages": UNKNOWN if swap is None else swap[1],
        "thermal": thermal_zones(source),
    }
    for name, reader in (("rpi", rpi), ("jetson", jetson), ("nvidia", nvidia)):
        section = reader(source)
        if section is not None:
            snap[name] = section
    snap["throttled"] = _or_unknown(throttled(snap))
    return snap
