"""The system track of a profile: CPU utilisation per core, process RSS and CPU frequency.

A daemon thread samples /proc and /sys every ``interval_s`` (default 10 ms: /proc/stat
counts in jiffies of 10 ms, finer sampling only repeats values) on the same clock as the
model and layer tracks (time.perf_counter_ns, CLOCK_MONOTONIC on Linux). It runs beside
the profiled queries, never inside them: the cost to the model is one thread waking
every interval, which the profile records (it is profiled time, never benchmark time).

What cannot be read here (no /proc: macOS, Windows; no cpufreq in a VM) is left out and
named in ``missing``; sampling never fails a profile.
"""
from __future__ import annotations

import os
import threading
import time

_STAT = "/proc/stat"
_STATM = "/proc/self/statm"
_FREQ = "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except OSError:
        return None


def _cpu_times(text: str) -> dict[str, tuple[int, int]]:
    """{cpuN: (busy jiffies, total jiffies)} from /proc/stat."""
    out = {}
    for line in text.splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            parts = line.split()
            values = [int(v) for v in parts[1:9]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            total = sum(values)
            out[parts[0]] = (total - idle, total)
    return out


class SystemSampler:
    """start() ... stop(); then ``samples``: [(t_ns, {"cpu": {cpuN: %}, "rss_mib": x, "mhz": {cpuN: x}})]."""

    def __init__(self, interval_s: float = 0.01):
        self.interval_s = max(0.001, float(interval_s))
        self.samples: list[tuple[int, dict]] = []
        self.missing: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        cores = os.cpu_count() or 1
        self._freq = [(f"cpu{i}", _FREQ.format(i)) for i in range(cores) if _read(_FREQ.format(i)) is not None]
        if _read(_STAT) is None:
            self.missing.append("CPU utilisation (no /proc/stat)")
        if _read(_STATM) is None:
            self.missing.append("process RSS (no /proc/self/statm)")
        if not self._freq:
            self.missing.append("CPU frequency (no cpufreq in /sys)")

    def start(self) -> "SystemSampler":
        self._last = _cpu_times(_read(_STAT) or "")
        self._thread = threading.Thread(target=self._loop, name="cr-system-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sample()  # the last state, at the end of the profiled queries
        # /proc/stat counts in ticks (10 ms): a profile shorter than one has no utilisation
        # yet; wait for the next tick (at most 50 ms, after the queries) so the track has one
        waited = 0
        while "CPU utilisation (no /proc/stat)" not in self.missing and waited < 10 and not any("cpu" in v for _, v in self.samples):
            time.sleep(0.005)
            waited += 1
            self._sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        now = time.perf_counter_ns()
        values: dict = {}
        stat = _read(_STAT)
        if stat is not None:
            times = _cpu_times(stat)
            cpu = {}
            for name, (busy, total) in times.items():
                b0, t0 = self._last.get(name, (busy, total))
                if total > t0:
                    cpu[name] = round(100.0 * (busy - b0) / (total - t0), 1)
            if cpu:
                values["cpu"] = cpu
                self._last = times
        statm = _read(_STATM)
        if statm is not None:
            values["rss_mib"] = round(int(statm.split()[1]) * self._page / 2**20, 2)
        mhz = {}
        for name, path in self._freq:
            text = _read(path)
            if text and text.strip().isdigit():
                mhz[name] = int(text) // 1000
        if mhz:
            values["mhz"] = mhz
        if values:
            self.samples.append((now, values))
