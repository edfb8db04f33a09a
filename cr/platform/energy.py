"""Energy meters: what can be read here, and joules from their readings, with a quality label.

    meters, why_not = energy.meters(source, command=os.environ.get("CR_ENERGY_COMMAND"))
    acc = energy.Accumulator(meter)                 # one per meter
    acc.feed(time.monotonic_ns(), meter.read())     # every sample; None = no reading this time
    energy.record([acc, ...], window_ns=(t0, t1), samples=n)   # the record's metrics.energy

Meters (each a pure reader over a Source, so fixture trees test them):
  rapl       /sys/class/powercap/intel-rapl:N/energy_uj (package and psys zones; a counter
             that wraps at max_energy_range_uj)
  nvml       NVML's total energy counter of every GPU (mJ; live: libnvidia-ml through ctypes,
             captured: commands/nvml-total-energy.txt, one line per GPU)
  ina3221    Jetson power rails: hwmon in<N>_input (mV) x curr<N>_input (mA), integrated
  rpi5-pmic  Raspberry Pi 5 PMIC: `vcgencmd pmic_read_adc` rail currents x voltages, integrated
  command    an external meter: a user command that prints a cumulative reading in joules

A counter is differenced (a wrap is undone with the counter's range; a counter that goes
backwards loses that interval and says so); a power reading is integrated over time.
Nothing is ever estimated: where no meter covers the measured window the label says
"not measurable here: <why>".
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess

from .sources import Source, run_tool

_POWERCAP = "/sys/class/powercap"
_INA3221 = "/sys/bus/i2c/drivers/ina3221"
MAX_INTERVALS = 1024  # beyond, adjacent intervals merge: totals stay exact, memory bounded
COMMAND_TIMEOUT_S = 5.0


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


class Meter:
    """One energy source. kind "counter": read() is cumulative joules; "power": watts now."""

    name = ""
    kind = "counter"
    wrap_j: float | None = None  # the counter's range, where it wraps
    every_s = 0.0  # minimum seconds between reads (a tool costs more than a sysfs file)
    detail: dict = {}

    def read(self) -> float | None:
        raise NotImplementedError


# -- RAPL ---------------------------------------------------------------------------------

def rapl_zones(source: Source) -> list[dict]:
    """Top-level powercap zones worth summing: every package-N, else psys (which holds them).
    Sub-zones (core, uncore, dram under a package) are inside their package and not summed."""
    zones = []
    for name in source.listdir(_POWERCAP):
        if not re.fullmatch(r"intel-rapl:\d+", name):
            continue
        label = (source.read(f"{_POWERCAP}/{name}/name") or "").strip()
        zones.append({"zone": name, "name": label, "path": f"{_POWERCAP}/{name}/energy_uj",
                      "max_range_uj": _int(source.read(f"{_POWERCAP}/{name}/max_energy_range_uj"))})
    packages = [z for z in zones if z["name"].startswith("package")]
    return packages or [z for z in zones if z["name"] == "psys"]


class Rapl(Meter):
    name = "rapl"

    def __init__(self, source: Source, zone: dict):
        self.source, self.zone = source, zone
        self.wrap_j = zone["max_range_uj"] / 1e6 if zone["max_range_uj"] else None
        self.detail = {"zone": zone["zone"], "name": zone["name"]}

    def read(self) -> float | None:
        uj = _int(self.source.read(self.zone["path"]))
        return None if uj is None else uj / 1e6


# -- NVML ---------------------------------------------------------------------------------

class _Nvml:
    """libnvidia-ml through ctypes: the total-energy counter (mJ since driver load) per GPU."""

    def __init__(self):
        import ctypes

        self.ctypes = ctypes
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        count = ctypes.c_uint()
        if self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            raise OSError("nvmlDeviceGetCount failed")
        self.handles = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) == 0:
                self.handles.append(handle)

    def total_mj(self) -> list[int | None]:
        out = []
        for handle in self.handles:
            value = self.ctypes.c_ulonglong()
            ok = self.lib.nvmlDeviceGetTotalEnergyConsumption(handle, self.ctypes.byref(value)) == 0
            out.append(value.value if ok else None)
        return out


def nvml_counters(source: Source) -> list[int | None] | None:
    """mJ per GPU (None for one that does not answer), or None where NVML is not here."""
    if not source.live:
        text = source.read("/commands/nvml-total-energy.txt")
        values = [_int(line) for line in (text or "").splitlines() if line.strip()]
        return values or None
    try:
        nvml = getattr(source, "_cr_nvml", None) or _Nvml()
    except (OSError, AttributeError):
        return None
    source._cr_nvml = nvml
    return nvml.total_mj() or None


class Nvml(Meter):
    name = "nvml"

    def __init__(self, source: Source, gpus: int):
        self.source = source
        self.detail = {"gpus": gpus}

    def read(self) -> float | None:
        values = nvml_counters(self.source)
        if not values or any(v is None for v in values):
            return None
        return sum(values) / 1e3


# -- Jetson INA3221 -------------------------------------------------------------------------

def ina3221_rails(source: Source) -> list[dict]:
    """Labelled rails of the INA3221 monitors (unconnected "NC" channels left out)."""
    rails = []
    for dev in source.listdir(_INA3221):
        for hw in source.listdir(f"{_INA3221}/{dev}/hwmon"):
            base = f"{_INA3221}/{dev}/hwmon/{hw}"
            for name in source.listdir(base):
                m = re.fullmatch(r"in(\d+)_label", name)
                if not m:
                    continue
                label = (source.read(f"{base}/{name}") or "").strip()
                if label and label.upper() != "NC":
                    n = m.group(1)
                    rails.append({"label": label, "mv": f"{base}/in{n}_input", "ma": f"{base}/curr{n}_input"})
    return rails


class Ina3221(Meter):
    name = "ina3221"
    kind = "power"

    def __init__(self, source: Source, rails: list[dict]):
        self.source, self.rails = source, rails
        self.detail = {"rails": [r["label"] for r in rails]}

    def read(self) -> float | None:
        watts = 0.0
        for rail in self.rails:
            mv, ma = _int(self.source.read(rail["mv"])), _int(self.source.read(rail["ma"]))
            if mv is None or ma is None:
                return None
            watts += mv * ma / 1e6
        return watts


# -- Raspberry Pi 5 PMIC --------------------------------------------------------------------

def pmic_watts(text: str | None) -> float | None:
    """Sum of current x voltage over the rails `vcgencmd pmic_read_adc` reports both for
    ("VDD_CORE_A current(7)=0.73206800A" with "VDD_CORE_V volt(15)=0.72000000V")."""
    amps, volts = {}, {}
    for m in re.finditer(r"^\s*(\S+)_([AV])\s+(?:current|volt)\(\d+\)=([-\d.]+)[AV]\s*$", text or "", re.MULTILINE):
        (amps if m.group(2) == "A" else volts)[m.group(1)] = float(m.group(3))
    rails = sorted(set(amps) & set(volts))
    return sum(amps[r] * volts[r] for r in rails) if rails else None


class Rpi5Pmic(Meter):
    name = "rpi5-pmic"
    kind = "power"
    every_s = 0.25

    def __init__(self, source: Source):
        self.source = source
        self.detail = {"tool": "vcgencmd pmic_read_adc"}

    def read(self) -> float | None:
        return pmic_watts(self.source.tool("vcgencmd-pmic_read_adc", ["vcgencmd", "pmic_read_adc"]))


# -- an external meter ------------------------------------------------------------------------

def parse_joules(text: str | None) -> float | None:
    """The last number printed (joules); None if there is none."""
    numbers = re.findall(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", text or "")
    return float(numbers[-1]) if numbers else None


class Command(Meter):
    """CR_ENERGY_COMMAND: run at the start, about once a second, and at the end; it prints a
    cumulative reading in joules (a meter's energy counter). Killed after COMMAND_TIMEOUT_S."""

    name = "command"
    every_s = 1.0

    def __init__(self, command: str, timeout: float | None = None):
        self.command, self.timeout = command, COMMAND_TIMEOUT_S if timeout is None else timeout
        self.argv = shlex.split(command)
        # its program only: an argument may be a credential (a token, a password for the meter's
        # API) and the record travels into dashboards and archives
        self.detail = {"command": self.shown_name(), "arguments": "not recorded"} if self.argv else {"command": ""}
        self.error: str | None = None

    def shown_name(self) -> str:
        """The program's file name, without its folder or arguments (what records and messages say)."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    def read(self) -> float | None:
        try:
            done = run_tool(self.argv, self.timeout)
        except subprocess.TimeoutExpired:
            self.error = f"it did not answer within {self.timeout:g} s and was stopped"
            return None
        if done is None:
            self.error = "it cannot be started"
            return None
        if done[0] != 0:
            self.error = f"it exited with status {done[0]}"
            return None
        value = parse_joules(done[1])
        if value is None:
            self.error = f"it printed no number ({done[1].strip()[:80]!r})"
        return value


# -- choosing ---------------------------------------------------------------------------------

def meters(source: Source, command: str | None = None) -> tuple[list[Meter], str]:
    """(the meters to read, why there are none). An external command, when given, is the
    only meter; else a Jetson's rails, else a Pi 5's PMIC, else RAPL and NVML together."""
    if command:
        try:
            meter = Command(command)
        except ValueError as exc:
            return [], f"CR_ENERGY_COMMAND cannot be parsed ({exc})"
        if not meter.argv:
            return [], "CR_ENERGY_COMMAND is empty"
        if meter.read() is None:
            return [], f"the energy command {meter.shown_name()!r} (CR_ENERGY_COMMAND) gave no reading: {meter.error}"
        return [meter], ""
    rails = ina3221_rails(source)
    if rails:
        meter = Ina3221(source, rails)
        if meter.read() is not None:
            return [meter], ""
    if "Raspberry Pi 5" in (source.read("/proc/device-tree/model") or ""):
        meter = Rpi5Pmic(source)
        if meter.read() is not None:
            return [meter], ""
    found: list[Meter] = []
    why = []
    zones = rapl_zones(source)
    for zone in zones:
        meter = Rapl(source, zone)
        if meter.read() is not None:
            found.append(meter)
        else:
            why.append(f"{zone['path']} is not readable (since Linux 5.10 only root may read RAPL counters)")
    if not zones:
        why.append("no RAPL counters (/sys/class/powercap/intel-rapl:*)")
    gpus = nvml_counters(source)
    if gpus and all(v is not None for v in gpus):
        found.append(Nvml(source, len(gpus)))
    elif gpus:
        why.append("a GPU does not report its energy counter through NVML")
    if found:
        return found, ""
    return [], "; ".join(why + ["no NVML, INA3221 rails or Raspberry Pi 5 PMIC; CR_ENERGY_COMMAND is not set"])


# -- from readings to joules --------------------------------------------------------------------

class Accumulator:
    """Readings of one meter -> (t0_ns, t1_ns, joules) intervals, bounded in number."""

    def __init__(self, meter: Meter):
        self.meter = meter
        self.intervals: list[list] = []
        self.last: tuple[int, float] | None = None
        self.first_ns: int | None = None
        self.wraps = self.backwards = self.missed = 0
        self.last_ns: int | None = None

    def feed(self, t_ns: int, value: float | None) -> None:
        if value is None:
            self.missed += 1
            return
        if self.last is None:
            self.last, self.first_ns, self.last_ns = (t_ns, value), t_ns, t_ns
            return
        t0, v0 = self.last
        self.last, self.last_ns = (t_ns, value), t_ns
        if self.meter.kind == "power":
            joules = (v0 + value) / 2 * (t_ns - t0) / 1e9
        else:
            joules = value - v0
            if joules < 0:
                wrap = self.meter.wrap_j
                if wrap and joules + wrap < wrap / 2:  # a wrap, not a reset: a short interval is far below half the range
                    joules += wrap
                    self.wraps += 1
                else:  # a reset or a bad reading: this interval is unknown, not negative
                    self.backwards += 1
                    self.intervals.append([t0, t_ns, None])
                    self._bound()
                    return
        self.intervals.append([t0, t_ns, joules])
        self._bound()

    def _bound(self) -> None:
        if len(self.intervals) <= MAX_INTERVALS:
            return
        merged = []
        for a, b in zip(self.intervals[0::2], self.intervals[1::2]):
            j = None if a[2] is None or b[2] is None else a[2] + b[2]
            merged.append([a[0], b[1], j])
        if len(self.intervals) % 2:
            merged.append(self.intervals[-1])
        self.intervals = merged

    def within(self, start_ns: int, end_ns: int) -> tuple[float | None, list[float]]:
        """(joules in [start, end], the per-interval joules there); None if an interval
        there is unknown. An interval cut by an edge counts in proportion to its overlap."""
        total, parts = 0.0, []
        for t0, t1, joules in self.intervals:
            overlap = min(t1, end_ns) - max(t0, start_ns)
            if overlap <= 0 or t1 <= t0:
                continue
            if joules is None:
                return None, []
            share = joules * overlap / (t1 - t0)
            total += share
            parts.append(share)
        return total, parts


def record(accs: list[Accumulator], window_ns: tuple[int, int] | None, run_ns: tuple[int, int],
           samples: int | None, why_not: str) -> dict:
    """metrics.energy: {"label": "measured", source, joules, avg_watts, samples_j, ...}
    over window_ns (the measured queries; else the whole run), or {"label": "not measurable here: ..."}."""
    if not accs:
        return {"label": f"not measurable here: {why_not}"}
    start, end = window_ns if window_ns else run_ns
    total, parts = 0.0, None
    for acc in accs:
        name = acc.meter.name
        if acc.first_ns is None or acc.first_ns > start or acc.last_ns < end:
            covered = "never answered" if acc.first_ns is None else \
                f"read from +{(acc.first_ns - run_ns[0]) / 1e9:.2f} s to +{(acc.last_ns - run_ns[0]) / 1e9:.2f} s only"
            return {"label": f"not measurable here: the {name} meter does not cover the measured window ({covered}"
                             + (f"; {acc.missed} readings failed" if acc.missed else "") + ")"}
        joules, these = acc.within(start, end)
        if joules is None:
            return {"label": f"not measurable here: the {name} counter went backwards during the measured window"}
        total += joules
        parts = these if parts is None else [a + b for a, b in zip(parts, these)] if len(parts) == len(these) else parts
    seconds = (end - start) / 1e9
    out = {
        "label": "measured",
        "source": "+".join(dict.fromkeys(a.meter.name for a in accs)),
        "joules": total,
        "avg_watts": total / seconds if seconds > 0 else None,
        "window": "measured queries" if window_ns else "whole run",
        "window_s": seconds,
        "samples_j": [round(p, 6) for p in (parts or [])][-MAX_INTERVALS:],
        "meters": [{"source": a.meter.name, **a.meter.detail, "wraps": a.wraps, "backwards": a.backwards,
                    "failed_reads": a.missed} for a in accs],
    }
    if samples:
        out["joules_per_sample"] = total / samples
    return out


def command_from_env() -> str | None:
    return os.environ.get("CR_ENERGY_COMMAND") or None
