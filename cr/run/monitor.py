"""The machine's state, energy and memory around one runtime child, sampled from cr.

    mon = Monitor(proc.pid).start()     # a thread in cr: outside the child and its timed path
    ...                                 # the child runs
    mon.stop()
    mon.attach(result)                  # result["machine"], metrics["energy"], metrics["memory"]

The thread takes a snapshot (cr.platform.state) when the child starts and one when it ends,
and every INTERVAL_S reads what is cheap (/proc/stat and the child's /proc/<pid>/stat for
the share of CPU time used by other processes, load average, per-core frequency, swap
counters, thermal zones, energy counters) and, less often, what costs more (the child's
smaps_rollup, vcgencmd, nvidia-smi). Everything it keeps is bounded (summaries and at most
energy.MAX_INTERVALS energy intervals), whatever the length of the run.

CR_MONITOR=0 turns it off (benchmarks/bench_monitor.py measures what it costs); the record
then says the state was not sampled. CR_ENERGY_COMMAND names an external meter
(docs/machine-state.md).
"""
from __future__ import annotations

import os
import threading
import time

from ..platform import energy, state
from ..platform.sources import HostSource, Source

INTERVAL_S = 0.1
TIMELINE_MAX = 100_000  # samples kept for a sustained run's windows (24 h at 0.1 s halved four times)
SLOW_EVERY_S = 1.0  # smaps_rollup takes the child's mmap lock; tools cost milliseconds
TOOLS_EVERY_S = 2.0  # vcgencmd / nvidia-smi during the run: throttling that comes and goes
TOOL_TIMEOUT_S = 2.0
OTHER_PROCESSES = "processes other than the measured child and cr"


def enabled() -> bool:
    return os.environ.get("CR_MONITOR", "1").strip().lower() not in ("0", "off", "no", "false")


def _clock_ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return 100


def _rpi_occurred(start: dict | None, end: dict | None) -> list[str] | None:
    """Flags the Pi firmware says occurred since boot at the end but not at the start."""
    flags = [((s or {}).get("rpi") or {}).get("throttled") for s in (start, end)]
    if not all(isinstance(f, dict) for f in flags):
        return None
    return [f for f in flags[1]["since_boot"] if f not in flags[0]["since_boot"]]


def _waited_ticks() -> int | None:
    """CPU time of cr's waited-for children (the finished child among them), in clock ticks."""
    try:
        import resource
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int((usage.ru_utime + usage.ru_stime) * _clock_ticks())


class Monitor:
    """Samples the machine while the process pid runs (see the module docstring)."""

    def __init__(self, pid: int, source: Source | None = None, interval_s: float = INTERVAL_S,
                 energy_command: str | None = None, timeline: bool = False):
        self.pid = pid
        self.timeline: list | None = [] if timeline else None  # a sustained run's: see window_states()
        self._stride, self._skipped = 1, 0
        self.source = source or HostSource(timeout=float(os.environ.get("CR_MONITOR_TOOL_TIMEOUT_S") or TOOL_TIMEOUT_S))
        self.interval_s = interval_s
        self.energy_command = energy_command if energy_command is not None else energy.command_from_env()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.start_snap: dict | None = None
        self.end_snap: dict | None = None
        self.samples = 0
        self.freq_min = self.freq_max = self.temp_max = self.load_max = None
        self.mem: dict = {}
        self.gpu_bytes: int | None = None
        self.accs: list[energy.Accumulator] = []
        self.energy_why = ""
        self._next_read: dict[int, float] = {}
        self.started_ns = self.ended_ns = 0
        self.error: str | None = None
        self.throttle_reasons: set[str] = set()
        self.throttle_samples = 0

    # -- the thread ------------------------------------------------------------------------

    def start(self) -> "Monitor":
        self.started_ns = time.monotonic_ns()
        self._cpu0, self._self0 = state.cpu_times(self.source), state.process_times(self.source, os.getpid(), children=False)
        self._child0 = self._child_last = state.process_times(self.source, self.pid) or 0
        self._waited0 = _waited_ticks()
        self._swap0 = state.swap_pages(self.source)
        self._thread = threading.Thread(target=self._run, name="cr-monitor", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            meters, self.energy_why = energy.meters(self.source, self.energy_command)
            self.accs = [energy.Accumulator(m) for m in meters]
            self._read_energy(force=True)
            self._slow()
            self.start_snap = state.snapshot(self.source)
            self._cpus = state.cpu_ids(self.source)
            self._zones = [z["zone"] for z in self.start_snap["thermal"]] if isinstance(self.start_snap["thermal"], list) else []
            self._rpi = isinstance((self.start_snap.get("rpi") or {}).get("throttled"), dict)
            self._nvidia = isinstance(self.start_snap.get("nvidia"), list)
            next_slow = time.monotonic() + SLOW_EVERY_S
            next_tools = time.monotonic() + TOOLS_EVERY_S
            while not self._stop.wait(self.interval_s):
                self._fast()
                if time.monotonic() >= next_slow:
                    self._slow()
                    next_slow = time.monotonic() + SLOW_EVERY_S
                if (self._rpi or self._nvidia) and time.monotonic() >= next_tools:
                    self._tools()
                    next_tools = time.monotonic() + TOOLS_EVERY_S
        except Exception as exc:  # the measurement goes on without its observer: say so in the record
            self.error = f"{type(exc).__name__}: {exc}"

    def _read_energy(self, force: bool = False) -> None:
        now = time.monotonic()
        for i, acc in enumerate(self.accs):
            if force or now >= self._next_read.get(i, 0.0):
                self._next_read[i] = now + acc.meter.every_s
                acc.feed(time.monotonic_ns(), acc.meter.read())

    def _fast(self) -> None:
        self.samples += 1
        self._read_energy()
        child = state.process_times(self.source, self.pid)
        if child is not None:
            self._child_last = child
        freqs = [f for f in state.cpu_freqs_mhz(self.source, self._cpus) if f is not None]
        if freqs:
            self.freq_min = min(freqs + ([self.freq_min] if self.freq_min is not None else []))
            self.freq_max = max(freqs + ([self.freq_max] if self.freq_max is not None else []))
        temps = state.temps_c(self.source, self._zones)
        if temps:
            self.temp_max = max(temps + ([self.temp_max] if self.temp_max is not None else []))
        load = state.load_avg(self.source)
        if isinstance(load, list):
            self.load_max = max(load[0], self.load_max if self.load_max is not None else load[0])
        if self.timeline is not None:
            self._keep(freqs, temps, load, child)

    def _keep(self, freqs: list, temps: list, load, child) -> None:
        """One sample of the timeline: (perf_counter_ns, mean clock MHz, hottest zone °C,
        1-minute load, (busy, total) CPU ticks, the child's and cr's CPU ticks). At most
        TIMELINE_MAX samples: past that every other one is dropped and the stride doubles."""
        self._skipped += 1
        if self._skipped < self._stride:
            return
        self._skipped = 0
        self.timeline.append((time.perf_counter_ns(), sum(freqs) / len(freqs) if freqs else None,
                              max(temps) if temps else None, load[0] if isinstance(load, list) else None,
                              state.cpu_times(self.source), child,
                              state.process_times(self.source, os.getpid(), children=False)))
        if len(self.timeline) >= TIMELINE_MAX:
            self.timeline = self.timeline[::2]
            self._stride *= 2

    def window_states(self, edges: list, start_ns: int) -> list[dict]:
        """The machine's state in each window of a sustained run (edges: [(end_ns, queries)]
        on the child's perf_counter_ns, which is this process's: CLOCK_MONOTONIC): the mean
        clock and the hottest zone of the samples within the window, the last load average,
        and the share of the CPU used by processes other than the child and cr between the
        samples that bound it. A window without a sample of its own takes the one before its
        end. {} for every window when nothing was sampled."""
        samples = self.timeline or []
        out, before, prev_ns = [], None, start_ns
        i = 0
        for end_ns, _ in edges:
            inside = []
            while i < len(samples) and samples[i][0] <= end_ns:
                if samples[i][0] > prev_ns:
                    inside.append(samples[i])
                else:
                    before = samples[i]
                i += 1
            last = inside[-1] if inside else (samples[i - 1] if i else None)
            if last is None:
                out.append({})
                prev_ns = end_ns
                continue
            freqs = [x[1] for x in inside if x[1] is not None] or ([last[1]] if last[1] is not None else [])
            temps = [x[2] for x in inside if x[2] is not None] or ([last[2]] if last[2] is not None else [])
            out.append({"freq_mhz": round(sum(freqs) / len(freqs), 1) if freqs else None,
                        "temp_c": round(max(temps), 1) if temps else None, "load_1m": last[3],
                        "cpu_other_share": _other_share(before or (inside[0] if len(inside) > 1 else None), last)})
            before, prev_ns = last, end_ns
        return out

    def _tools(self) -> None:
        """Throttling now, from the firmware and the GPUs (what start and end snapshots can miss)."""
        if self._rpi:
            pi = state.rpi_throttled(state.tool(self.source, "vcgencmd-get_throttled"))
            if isinstance(pi, dict):
                self.throttle_samples += 1
                self.throttle_reasons.update(f"raspberry pi: {flag}" for flag in pi["now"])
        if self._nvidia:
            gpus = state.nvidia_state(state.tool(self.source, "nvidia-smi-state"))
            if isinstance(gpus, list):
                self.throttle_samples += 1
                for gpu in gpus:
                    if isinstance(gpu["slowdowns"], list):
                        self.throttle_reasons.update(f"gpu {gpu['index']}: {r}" for r in gpu["slowdowns"])
                    if isinstance(gpu["temp_c"], float):
                        self.temp_max = max(gpu["temp_c"], self.temp_max if self.temp_max is not None else gpu["temp_c"])

    def _slow(self) -> None:
        mem = state.smaps_rollup(self.source, self.pid)
        if mem:
            for key, value in mem.items():
                if value is not None:
                    self.mem[key] = max(value, self.mem.get(key, 0))
        if getattr(self, "_gpu", True):
            text = state.tool(self.source, "nvidia-smi-apps")
            self._gpu = text is not None
            used = state.nvidia_app_memory(text, {self.pid})
            if used is not None:
                self.gpu_bytes = max(used, self.gpu_bytes or 0)

    def stop(self) -> "Monitor":
        """Stop sampling (the child has ended) and take the end snapshot."""
        self.ended_ns = time.monotonic_ns()
        self._cpu1, self._self1 = state.cpu_times(self.source), state.process_times(self.source, os.getpid(), children=False)
        self._swap1 = state.swap_pages(self.source)
        self._waited1 = _waited_ticks()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.start_snap is not None:
            self._read_energy(force=True)
            self.end_snap = state.snapshot(self.source)
        return self

    # -- the record ----------------------------------------------------------------------------

    def _shares(self) -> tuple[float | None, float | None]:
        """(other processes', the child's) share of the machine's CPU capacity during the run."""
        if not (self._cpu0 and self._cpu1) or self._cpu1[1] <= self._cpu0[1]:
            return None, None
        total = self._cpu1[1] - self._cpu0[1]
        busy = self._cpu1[0] - self._cpu0[0]
        # /proc/stat and /proc/<pid>/stat count in the same USER_HZ ticks
        child = max(0, self._child_last - self._child0)
        if self._waited0 is not None and self._waited1 is not None:
            # the child's last ticks, after the last sample, are in cr's waited-for children
            # (with the tools the monitor ran: cr's own cost, not other processes')
            child = max(child, self._waited1 - self._waited0)
        # cr's own threads only: the waited-for child is already in `child` (counting cr's
        # cutime too would subtract the child twice)
        mine = (self._self1 or 0) - (self._self0 or 0)
        other = max(0.0, min(1.0, (busy - child - max(0, mine)) / total))
        return round(other, 4), round(min(1.0, child / total), 4)

    def machine(self) -> dict:
        other, child = self._shares()
        swap = (self._swap1[0] - self._swap0[0], self._swap1[1] - self._swap0[1]) if self._swap0 and self._swap1 else None
        during = {
            "interval_s": self.interval_s,
            "samples": self.samples,
            "duration_s": round((self.ended_ns - self.started_ns) / 1e9, 3),
            "cpu_other_share": other,
            "cpu_child_share": child,
            "cpu_other_means": OTHER_PROCESSES,
            "load_avg_max": self.load_max,
            "freq_mhz_min": self.freq_min,
            "freq_mhz_max": self.freq_max,
            "swap_in_pages": swap[0] if swap else None,
            "swap_out_pages": swap[1] if swap else None,
            "throttled": None,
            "temp_c_max": round(self.temp_max, 3) if self.temp_max is not None else None,
        }
        snaps = [s for s in (self.start_snap, self.end_snap) if s]
        verdicts = [v for v in (state.throttled(s) for s in snaps) if v is not None]
        if self.throttle_samples:
            verdicts.append(bool(self.throttle_reasons))
        occurred = _rpi_occurred(self.start_snap, self.end_snap)
        if occurred is not None:  # the firmware's since-boot flags gained one during the run
            verdicts.append(bool(occurred))
            self.throttle_reasons.update(f"raspberry pi: {flag} (occurred)" for flag in occurred)
        during["throttled"] = any(verdicts) if verdicts else None
        during["throttle_reasons"] = sorted(self.throttle_reasons)
        temps = [t for t in [during["temp_c_max"], *(state.max_temp_c(s) for s in snaps)] if t is not None]
        freqs = [during["freq_mhz_max"]] + [c["cur_mhz"] for s in snaps if isinstance(s["cpus"], list)
                                            for c in s["cpus"] if isinstance(c["cur_mhz"], float)]
        freqs = [f for f in freqs if f is not None]
        governors = {s["governor"] for s in snaps if s["governor"] != state.UNKNOWN}
        load_start = self.start_snap["load_avg"][0] if self.start_snap and isinstance(self.start_snap["load_avg"], list) else None
        out = {
            "start": self.start_snap or state.UNKNOWN,
            "end": self.end_snap or state.UNKNOWN,
            "during": during,
            "summary": {
                "governor": (governors.pop() if len(governors) == 1 else
                             "mixed: " + " then ".join(sorted(governors)) if governors else None),
                "freq_mhz_max": max(freqs) if freqs else None,
                "cpu_other_share": other,
                "throttled": during["throttled"],
                "temp_c_max": max(temps) if temps else None,
                "swap_activity": bool(swap[0] or swap[1]) if swap else None,
                "load_avg_start": load_start,
            },
        }
        if self.error:
            out["monitor_error"] = self.error
        return out

    def memory(self, reported_peak: int | None) -> dict:
        peaks = [v for v in (reported_peak, self.mem.get("peak_rss_bytes"), self.mem.get("rss_bytes")) if v]
        return {
            "peak_rss_bytes": max(peaks) if peaks else None,
            "uss_bytes": self.mem.get("uss_bytes"),
            "pss_bytes": self.mem.get("pss_bytes"),
            "gpu_bytes": self.gpu_bytes,
        }

    def energy(self, metrics: dict | None) -> dict:
        metrics = metrics or {}
        window = metrics.get("window_monotonic_ns")
        run = (self.started_ns, self.ended_ns)
        if not (isinstance(window, list) and len(window) == 2 and all(isinstance(v, int) for v in window)
                and run[0] <= window[0] < window[1] <= run[1]):
            window = None  # not on this clock (another OS) or not given: the whole run
        firsts = [a.first_ns for a in self.accs if a.first_ns is not None]
        if firsts and len(firsts) == len(self.accs):
            run = (max(run[0], *firsts), run[1])  # the whole run: from the meters' first reading on
        if self.start_snap is None and self.accs == [] and not self.energy_why:
            why = f"the monitor failed ({self.error})" if self.error else "the run ended before the first reading"
            return {"label": f"not measurable here: {why}"}
        return energy.record(self.accs, tuple(window) if window else None, run,
                             metrics.get("samples") if window else None, self.energy_why)

    def attach(self, result: dict) -> dict:
        """Add machine, metrics.energy and metrics.memory to a child's result (in place)."""
        result["machine"] = self.machine()
        metrics = result.get("metrics")
        if isinstance(metrics, dict):
            metrics["energy"] = self.energy(metrics)
            metrics["memory"] = self.memory(metrics.get("peak_rss_bytes"))
        return result


def _other_share(a, b) -> float | None:
    """The share of the whole CPU used by processes other than the child and cr between
    two timeline samples; None when a reading is missing or no time passed."""
    if a is None or b is None or a is b or any(x is None for x in (a[4], b[4], a[5], b[5], a[6], b[6])):
        return None
    total = b[4][1] - a[4][1]
    if total <= 0:
        return None
    busy = b[4][0] - a[4][0] - (b[5] - a[5]) - (b[6] - a[6])
    return round(max(0.0, min(1.0, busy / total)), 4)


def not_sampled() -> dict:
    return {"label": "not sampled: CR_MONITOR=0"}


def start_for(action: str, pid: int, timeline: bool = False) -> Monitor | None:
    """A started Monitor for a benchmark's child (None for other actions); with CR_MONITOR=0
    a marker that makes finish() say the state was not sampled. timeline: keep every
    sample for a sustained run's windows (window_states())."""
    if action != "benchmark":
        return None
    return Monitor(pid, timeline=timeline).start() if enabled() else _OFF


_OFF = object()


def finish(mon, result: dict, latencies=None) -> dict:
    """Stop mon and attach what it saw to result; the result as is for an unwatched job. A
    sustained run's metrics["sustained"] (the child's window edges) becomes its analysis
    (cr.results.sustained.analyse) with the machine's state of each window."""
    if mon is None:
        return result
    if mon is _OFF:
        result["machine"] = not_sampled()
        _sustained(result, latencies, None)
        return result
    mon.stop()
    _sustained(result, latencies, mon)
    return mon.attach(result)


def _sustained(result: dict, latencies, mon) -> None:
    metrics = result.get("metrics") if isinstance(result.get("metrics"), dict) else {}
    raw = metrics.get("sustained")
    if not (isinstance(raw, dict) and "edges" in raw) or latencies is None:
        return
    from ..results.sustained import analyse

    edges = [tuple(e) for e in raw["edges"]]
    if isinstance(mon, Monitor):
        states, note = mon.window_states(edges, raw["start_ns"]), None
    else:
        states, note = [{} for _ in edges], "not sampled: CR_MONITOR=0"
    metrics["sustained"] = analyse(latencies, edges, states, raw["start_ns"], raw["duration_s"], raw["window_s"],
                                   state_note=note)


def abandon(watch: list) -> None:
    """Stop a monitor whose run raised (Ctrl-C in cr): no thread outlives its child."""
    for mon in watch:
        if isinstance(mon, Monitor):
            mon.stop()
