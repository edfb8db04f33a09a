"""The machine's state, energy and memory of a benchmark: readers over captured device trees
(tests/fixtures/state), the faults each meter meets (wrap, backwards, a file vanishing, a
tool that hangs), and real benchmarks whose records carry them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cr.platform import energy, state
from cr.platform.sources import CapturedSource, HostSource
from helpers.machine_state import FAST, _fake_tool, _meter_script

FIX = Path(__file__).parent / "fixtures" / "state"
GARBLED = Path(__file__).parent / "fixtures" / "platforms" / "garbled"


def snap(name: str) -> dict:
    return state.snapshot(CapturedSource(FIX / name))


# -- each device kind, from its captured tree ---------------------------------------------

def test_raspberry_pi_4_says_it_is_under_voltage_and_throttled():
    s = snap("rpi4")
    assert s["governor"] == "ondemand"
    assert [c["cur_mhz"] for c in s["cpus"]] == [1800.0] * 4 and s["cpus"][0]["min_mhz"] == 600.0
    assert s["rpi"]["throttled"] == {"raw": "0x50005", "now": ["under-voltage", "throttled"],
                                     "since_boot": ["under-voltage", "throttled"]}
    assert s["rpi"]["temp_c"] == 48.7 and s["throttled"] is True
    assert s["thermal"] == [{"zone": "thermal_zone0", "type": "cpu-thermal", "temp_c": 48.686}]
    assert s["load_avg"] == [0.52, 0.31, 0.18] and s["mem_available_bytes"] == 7421312 * 1024


def test_raspberry_pi_5_is_not_throttled_and_its_pmic_gives_watts():
    s = snap("rpi5")
    assert s["throttled"] is False and s["rpi"]["throttled"]["now"] == [] and s["cpus"][0]["max_mhz"] == 2400.0
    meters, why = energy.meters(CapturedSource(FIX / "rpi5"))
    assert [m.name for m in meters] == ["rpi5-pmic"] and why == ""
    # the sum of current x voltage over the 12 rails that report both (EXT5V_V and BATT_V have no current)
    assert meters[0].read() == pytest.approx(1.5944, abs=1e-3)


def test_jetson_reports_its_power_mode_gpu_clock_and_rails():
    s = snap("jetson-agx-orin")
    assert s["jetson"] == {"nvpmodel": {"mode": "MAXN", "id": 0},
                           "clocks": [{"device": "17000000.ga10b", "cur_mhz": 1300.5, "min_mhz": 306.0, "max_mhz": 1300.5}]}
    assert s["governor"] == "schedutil" and len(s["cpus"]) == 12
    assert {z["type"] for z in s["thermal"]} >= {"cpu-thermal", "gpu-thermal", "tj-thermal"}
    assert state.max_temp_c(s) == 47.218
    meters, _ = energy.meters(CapturedSource(FIX / "jetson-agx-orin"))
    assert meters[0].name == "ina3221"
    assert meters[0].detail["rails"] == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"]  # NC left out
    assert meters[0].read() == pytest.approx((19984 * 1624 + 19984 * 811 + 5008 * 1102 + 4992 * 321) / 1e6)


def test_x86_server_sums_its_package_zones_not_their_sub_zones():
    s = snap("x86-rapl")
    assert s["governor"] == "performance" and s["swap_in_pages"] == 12 and s["swap_out_pages"] == 340
    meters, _ = energy.meters(CapturedSource(FIX / "x86-rapl"))
    assert [(m.name, m.detail["name"]) for m in meters] == [("rapl", "package-0"), ("rapl", "package-1")]
    assert meters[0].wrap_j == pytest.approx(262143.32885) and meters[0].read() == pytest.approx(91234.56789)


def test_laptop_with_mixed_governors_and_root_only_rapl():
    s = snap("x86-laptop")
    assert s["governor"] == "mixed: performance (2-3), powersave (0-1)"
    meters, why = energy.meters(CapturedSource(FIX / "x86-laptop"))
    assert meters == [] and "intel-rapl:0/energy_uj is not readable" in why and "root" in why


def test_gpu_host_names_the_throttled_gpu_and_reads_nvml_counters():
    s = snap("gpu-h100")
    gpus = s["nvidia"]
    assert len(gpus) == 8 and s["throttled"] is True
    assert gpus[3]["throttled"] is True and gpus[3]["throttle_reasons"] == ["sw thermal slowdown"]
    assert gpus[1]["throttled"] is False and gpus[1]["throttle_reasons"] == ["gpu idle"]  # idle is not throttling
    assert gpus[0]["sm_mhz"] == 1980.0 and gpus[0]["power_w"] == 412.77 and gpus[0]["memory_used_bytes"] == 70311 * 2**20
    assert state.max_temp_c(s) == 87.0
    meters, _ = energy.meters(CapturedSource(FIX / "gpu-h100"))
    assert [m.name for m in meters] == ["nvml"] and meters[0].read() == pytest.approx(sum(83112345678 + i * 1000 for i in range(8)) / 1e3)
    apps = state.tool(CapturedSource(FIX / "gpu-h100"), "nvidia-smi-apps")
    assert state.nvidia_app_memory(apps, {4242}) == 70304 * 2**20 and state.nvidia_app_memory(apps, {1}) is None


@pytest.mark.parametrize("root", [GARBLED, None], ids=["garbled", "empty"])
def test_unreadable_machines_read_as_unknown_never_an_error(root, tmp_path):
    s = state.snapshot(CapturedSource(root or tmp_path))
    for key in ("cpus", "governor", "load_avg", "mem_available_bytes", "swap_used_bytes", "thermal", "throttled"):
        assert s[key] == "unknown", key
    meters, why = energy.meters(CapturedSource(root or tmp_path))
    assert meters == [] and why


def test_proc_readers_parse_a_command_name_with_spaces_and_parentheses(tmp_path):
    (tmp_path / "proc" / "77").mkdir(parents=True)
    # fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    (tmp_path / "proc" / "77" / "stat").write_text("77 (my (odd) name) S 1 77 77 0 -1 4194304 10 0 0 0 120 30 5 2 20 0 1 0\n")
    assert state.process_times(CapturedSource(tmp_path), 77) == 157
    assert state.process_times(CapturedSource(tmp_path), 78) is None
    busy, total = state.cpu_times(CapturedSource(FIX / "rpi4"))
    assert total == 4 * (10452 + 2890 + 184302 + 311 + 97) + 12 and busy == total - 4 * (184302 + 311)


def test_smaps_rollup_of_a_live_process_orders_uss_pss_rss():
    mem = state.smaps_rollup(HostSource(), os.getpid())
    assert 0 < mem["uss_bytes"] <= mem["pss_bytes"] <= mem["rss_bytes"] <= mem["peak_rss_bytes"]


# -- energy: counters that advance, wrap, go backwards, vanish ----------------------------

def _rapl_tree(tmp_path) -> tuple[CapturedSource, Path]:
    root = tmp_path / "rapl"
    shutil.copytree(FIX / "x86-rapl", root)
    (root / "sys/class/powercap/intel-rapl:1").rename(root / "sys/class/powercap/gone")  # one package is enough
    return CapturedSource(root), root / "sys/class/powercap/intel-rapl:0/energy_uj"


def _feed(acc, counter: Path, values_uj, start_ns=0, step_ns=100_000_000):
    for i, v in enumerate(values_uj):
        if v is None:
            counter.unlink(missing_ok=True)
        else:
            counter.write_text(f"{v}\n")
        acc.feed(start_ns + i * step_ns, acc.meter.read())
    return start_ns, start_ns + (len(values_uj) - 1) * step_ns


def test_rapl_counter_advancing_and_wrapping_at_its_range(tmp_path):
    source, counter = _rapl_tree(tmp_path)
    (meter,), _ = energy.meters(source)
    acc = energy.Accumulator(meter)
    top = 262143328850
    run = _feed(acc, counter, [top - 3_000_000, top - 1_000_000, 1_000_000, 3_000_000, 5_000_000])
    rec = energy.record([acc], None, run, None, "")
    assert rec["label"] == "measured" and rec["source"] == "rapl" and rec["window"] == "whole run"
    assert rec["joules"] == pytest.approx(8.0) and rec["avg_watts"] == pytest.approx(20.0)  # 8 J in 0.4 s
    assert rec["samples_j"] == pytest.approx([2.0, 2.0, 2.0, 2.0]) and rec["meters"][0]["wraps"] == 1


def test_a_counter_going_backwards_is_not_a_measurement(tmp_path):
    source, counter = _rapl_tree(tmp_path)
    (meter,), _ = energy.meters(source)
    acc = energy.Accumulator(meter)
    run = _feed(acc, counter, [50_000_000, 52_000_000, 40_000_000, 42_000_000])  # a reset, not a wrap
    rec = energy.record([acc], None, run, None, "")
    assert rec == {"label": "not measurable here: the rapl counter went backwards during the measured window"}


def test_a_counter_file_vanishing_mid_run_leaves_the_window_uncovered(tmp_path):
    source, counter = _rapl_tree(tmp_path)
    (meter,), _ = energy.meters(source)
    acc = energy.Accumulator(meter)
    run = _feed(acc, counter, [10_000_000, 12_000_000, 14_000_000, None, None])
    rec = energy.record([acc], None, run, None, "")
    assert rec["label"].startswith("not measurable here: the rapl meter does not cover the measured window")
    assert "to +0.20 s only" in rec["label"] and "2 readings failed" in rec["label"]


def test_a_missed_read_inside_the_window_loses_nothing_of_a_counter(tmp_path):
    source, counter = _rapl_tree(tmp_path)
    (meter,), _ = energy.meters(source)
    acc = energy.Accumulator(meter)
    counter_values = [10_000_000, 11_000_000, None, 13_000_000, 14_000_000]
    run = _feed(acc, counter, counter_values)
    # only the measured window [0.1 s, 0.4 s] counts, joules per sample over it
    rec = energy.record([acc], (100_000_000, 400_000_000), run, 300, "")
    assert rec["joules"] == pytest.approx(3.0) and rec["joules_per_sample"] == pytest.approx(0.01)
    assert rec["window"] == "measured queries" and rec["meters"][0]["failed_reads"] == 1


def test_intervals_stay_bounded_and_totals_exact_over_a_long_run(tmp_path):
    source, counter = _rapl_tree(tmp_path)
    (meter,), _ = energy.meters(source)
    acc = energy.Accumulator(meter)
    for i in range(5000):
        acc.feed(i * 100_000_000, 1000.0 + i * 0.5)
    assert len(acc.intervals) <= energy.MAX_INTERVALS
    rec = energy.record([acc], None, (0, 4999 * 100_000_000), None, "")
    assert rec["joules"] == pytest.approx(4999 * 0.5) and len(rec["samples_j"]) <= energy.MAX_INTERVALS


def test_power_meters_integrate_over_time(tmp_path):
    root = tmp_path / "orin"
    shutil.copytree(FIX / "jetson-agx-orin", root)
    (meter,), _ = energy.meters(CapturedSource(root))
    acc = energy.Accumulator(meter)
    for i in range(11):  # 1 s of readings every 100 ms at a constant draw
        acc.feed(i * 100_000_000, meter.read())
    rec = energy.record([acc], None, (0, 1_000_000_000), None, "")
    assert rec["source"] == "ina3221" and rec["joules"] == pytest.approx(meter.read()) and rec["avg_watts"] == pytest.approx(meter.read())


# -- tools on PATH: real outputs, and ones that hang ------------------------------------------


def test_live_vcgencmd_and_nvidia_smi_outputs_are_read(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    outputs = {"get_throttled": (FIX / "rpi4/commands/vcgencmd-get_throttled.txt").read_text(),
               "measure_temp": (FIX / "rpi4/commands/vcgencmd-measure_temp.txt").read_text()}
    _fake_tool(bin_dir, "vcgencmd", f"sys.stdout.write({outputs!r}[sys.argv[1]])\n")
    smi = (FIX / "gpu-h100/commands/nvidia-smi-state.txt").read_text()
    _fake_tool(bin_dir, "nvidia-smi", f"sys.stdout.write({smi!r} if '--query-gpu' in sys.argv[1] else '')\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    s = state.snapshot(HostSource(timeout=5))
    assert s["rpi"]["throttled"]["raw"] == "0x50005" and s["rpi"]["temp_c"] == 48.7
    assert len(s["nvidia"]) == 8 and s["throttled"] is True


def test_a_hanging_vcgencmd_and_nvidia_smi_are_killed_and_read_as_unknown(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    for name in ("vcgencmd", "nvidia-smi"):
        _fake_tool(bin_dir, name, "time.sleep(60)\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    source = HostSource(timeout=0.5)
    t0 = time.monotonic()
    s = state.snapshot(source)
    first = time.monotonic() - t0
    assert s["rpi"] == {"throttled": "unknown", "temp_c": "unknown"} and s["nvidia"] == "unknown"
    assert first < 10  # each tool killed after its bound
    t0 = time.monotonic()
    state.snapshot(source)  # a tool that hung once is not asked again
    assert time.monotonic() - t0 < 0.5


def test_an_external_meter_command_that_hangs_or_prints_nothing_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(energy, "COMMAND_TIMEOUT_S", 0.5)
    hang = _meter_script(tmp_path, "time.sleep(60)\n")
    meters, why = energy.meters(CapturedSource(tmp_path), command=hang)
    assert meters == [] and "did not answer within 0.5 s" in why
    junk = _meter_script(tmp_path, "print('meter offline')\n")
    assert "printed no number ('meter offline')" in energy.meters(CapturedSource(tmp_path), command=junk)[1]
    assert "cannot be parsed" in energy.meters(CapturedSource(tmp_path), command="meter 'unclosed")[1]


# -- the sampler around real processes ---------------------------------------------------------

def _spin(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"])


def _watch(child_seconds: float, busy: subprocess.Popen | None = None):
    from cr.run.monitor import Monitor

    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({child_seconds})"])
    busy_before = state.process_times(HostSource(), busy.pid) if busy else None
    mon = Monitor(child.pid, energy_command="").start()
    child.wait()
    mon.stop()
    busy_share = None
    if busy:
        total = mon._cpu1[1] - mon._cpu0[1]
        busy_share = (state.process_times(HostSource(), busy.pid) - busy_before) / total
    return mon.machine(), busy_share


@pytest.mark.slow
def test_a_busy_loop_on_another_core_shows_as_other_processes_cpu():
    quiet, _ = _watch(2.0)
    busy = _spin(6.0)
    try:
        time.sleep(0.3)
        loaded, busy_share = _watch(2.0, busy)
    finally:
        busy.kill()
        busy.wait()
    other, quiet_other = loaded["summary"]["cpu_other_share"], quiet["summary"]["cpu_other_share"]
    # always: the loop's own ticks (read from its /proc/<pid>/stat) are inside "other", since
    # the measured child only sleeps; the share never exceeds the machine
    assert busy_share > 0.02 and busy_share * 0.9 <= other <= 1.0, (other, busy_share)
    if quiet_other < 0.5:  # the shared machine had room: the loop shows as a clear difference
        assert other > quiet_other + busy_share * 0.5, (other, quiet_other, busy_share)
        if (os.cpu_count() or 1) <= 2:  # one spinning process is a large share of a small machine
            assert other > 0.3, (other, busy_share)
    assert loaded["during"]["cpu_child_share"] < 0.05 and loaded["during"]["samples"] >= 10


def test_the_record_of_a_real_benchmark_carries_machine_memory_and_measured_energy(run_cr, tmp_path):
    # an external meter: a counter of 3 W since the epoch, as a wall-plug meter's energy register would be
    meter = _meter_script(tmp_path, "print(f'{time.time() * 3.0:.3f}')\n")
    out = tmp_path / "r.json"
    # an argument may be a credential: the record names the program only
    done = run_cr("benchmark", "model:iris-logreg", *FAST, "-o", out,
                  env={"CR_ENERGY_COMMAND": f"{meter} --token=s3cr3t-t0ken"})
    assert done.returncode == 0, done.stderr
    assert "s3cr3t" not in out.read_text() and "s3cr3t" not in done.stdout + done.stderr
    record = json.loads(out.read_text())
    assert record["metrics"]["energy"]["meters"][0]["command"] == "meter"
    m, machine = record["metrics"], record["machine"]
    assert set(machine) >= {"start", "end", "during", "summary"}
    assert set(machine["summary"]) == {"governor", "freq_mhz_max", "cpu_other_share", "throttled", "temp_c_max",
                                       "swap_activity", "load_avg_start"}
    assert 0 <= machine["summary"]["cpu_other_share"] <= 1 and machine["during"]["samples"] >= 5
    assert machine["during"]["cpu_child_share"] > 0.1  # the null backend spins for a second
    assert isinstance(machine["start"]["load_avg"], list) and machine["start"]["mem_available_bytes"] > 0
    mem = m["memory"]
    assert 0 < mem["uss_bytes"] <= mem["pss_bytes"] <= mem["peak_rss_bytes"] and mem["gpu_bytes"] is None
    en = m["energy"]
    assert en["label"] == "measured" and en["source"] == "command" and en["window"] == "measured queries"
    assert en["avg_watts"] == pytest.approx(3.0, rel=0.35) and en["joules"] > 0
    assert en["joules_per_sample"] == pytest.approx(en["joules"] / m["samples"])
    assert "energy " in done.stdout and "(measured: command)" in done.stdout and "USS" in done.stdout

    shown = run_cr("results", "show", record["uid"])
    assert shown.returncode == 0, shown.stderr
    assert "W average" in shown.stdout and "of the machine's CPU used by other processes" in shown.stdout
    # the dashboard's energy column (and its Pareto plot) reads joules per sample from the record
    from cr.dashboard import records

    row = dict(zip(records.FIELDS, records.summarise(record)))
    assert row["energy_j"] == pytest.approx(en["joules_per_sample"], rel=1e-4)


def test_no_meter_here_is_said_and_the_monitor_can_be_turned_off(run_cr, tmp_path):
    out = tmp_path / "r.json"
    done = run_cr("benchmark", "model:iris-logreg", *FAST, "-o", out, env={"CR_ENERGY_COMMAND": ""})
    assert done.returncode == 0, done.stderr
    en = json.loads(out.read_text())["metrics"]["energy"]
    assert en["label"].startswith("not measurable here: ") and set(en) == {"label"}
    done = run_cr("benchmark", "model:iris-logreg", *FAST, "-o", out, env={"CR_MONITOR": "0"})
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["machine"] == {"label": "not sampled: CR_MONITOR=0"} and "energy" not in record["metrics"]


def test_a_crashed_benchmark_still_records_the_machine(run_cr, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "crashy.py").write_text(
        "import os\nfrom cr.runtime.backends.null import NullBackend\n"
        "class Crashy(NullBackend):\n    name = 'crashy'\n    def run(self, batch):\n        os.abort()\n")
    out = tmp_path / "failed.json"
    env = {"CR_BACKENDS": "crashy=crashy:Crashy",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(plugins), os.environ.get("PYTHONPATH")]))}
    done = run_cr("benchmark", "model:iris-logreg", "--backend", "crashy", "-o", out, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    record = json.loads(out.read_text())
    assert record["status"] == "failed" and record["metrics"] is None
    assert set(record["machine"]["summary"]) >= {"cpu_other_share", "governor"} and isinstance(record["machine"]["start"], dict)


def _put(path: Path, text: str) -> None:
    """Replace a file at once, as a sysfs read sees a whole value (never a half-written one)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def _monitor_over_tree(tmp_path, write_counter, seconds: float = 1.2):
    """A Monitor over a copied RAPL tree (energy and cpufreq from files a thread rewrites),
    watching a real sleeping process; (the Monitor, its energy block for the whole run)."""
    from cr.run.monitor import Monitor

    source, counter = _rapl_tree(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    import threading

    done = threading.Event()

    t0 = time.monotonic()

    def writer():  # the counter follows the clock (a steady draw), however late this thread runs
        while not done.is_set():
            write_counter(counter, time.monotonic() - t0)
            time.sleep(0.02)

    t = threading.Thread(target=writer)
    write_counter(counter, 0.0)
    t.start()
    try:
        mon = Monitor(child.pid, source=source, interval_s=0.05, energy_command="").start()
        child.wait()
        mon.stop()
    finally:
        done.set()
        t.join()
    return mon, mon.energy({})


def test_the_monitor_unwraps_a_counter_that_wraps_during_a_run(tmp_path):
    top = 262143328850
    # 5 W, starting 1 J below the wrap
    mon, rec = _monitor_over_tree(tmp_path, lambda f, t: _put(f, f"{(top - 1_000_000 + int(t * 5_000_000)) % top}\n"))
    assert rec["label"] == "measured" and rec["source"] == "rapl" and rec["meters"][0]["wraps"] == 1
    assert rec["avg_watts"] == pytest.approx(5.0, rel=0.3) and rec["window"] == "whole run"
    assert mon.machine()["summary"]["governor"] == "performance" and mon.machine()["during"]["freq_mhz_max"] == 3800.0


def test_the_monitor_says_energy_is_not_measurable_when_the_counter_vanishes_mid_run(tmp_path):
    def write(f, t):
        if t < 0.4:
            _put(f, f"{1_000_000 + int(t * 5_000_000)}\n")
        else:
            f.unlink(missing_ok=True)  # the zone disappears (a driver unloaded, a hot-unplug)

    _, rec = _monitor_over_tree(tmp_path, write)
    assert rec["label"].startswith("not measurable here: the rapl meter does not cover the measured window")
    assert "readings failed" in rec["label"]


def test_throttling_that_comes_and_goes_during_a_run_is_recorded(tmp_path, monkeypatch):
    """A Pi that is fine at the start, throttles mid-run and recovers before the end: the
    sampled firmware flags and the since-boot bits gained during the run both say so."""
    from cr.run import monitor

    monkeypatch.setattr(monitor, "TOOLS_EVERY_S", 0.1)
    root = tmp_path / "pi"
    shutil.copytree(FIX / "rpi4", root)
    flags = root / "commands" / "vcgencmd-get_throttled.txt"
    _put(flags, "throttled=0x0\n")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    mon = monitor.Monitor(child.pid, source=CapturedSource(root), interval_s=0.05, energy_command="").start()
    time.sleep(0.5)
    _put(flags, "throttled=0x40004\n")  # throttled now (bit 2) and since boot (bit 18)
    time.sleep(0.5)
    _put(flags, "throttled=0x40000\n")  # recovered: only the since-boot bit remains
    child.wait()
    mon.stop()
    m = mon.machine()
    assert m["start"]["throttled"] is False and m["end"]["throttled"] is False  # the snapshots alone miss it
    assert m["during"]["throttled"] is True and m["summary"]["throttled"] is True
    assert m["during"]["throttle_reasons"] == ["raspberry pi: throttled", "raspberry pi: throttled (occurred)"]


def test_a_quiet_pi_run_is_not_throttled(tmp_path):
    from cr.run import monitor

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    mon = monitor.Monitor(child.pid, source=CapturedSource(FIX / "rpi5"), interval_s=0.05, energy_command="").start()
    child.wait()
    m = mon.stop().machine()
    assert m["during"]["throttled"] is False and m["during"]["throttle_reasons"] == []


def test_the_printed_lines_name_throttling_swapping_and_say_nothing_for_older_records():
    from cr.results.machine import rows

    assert rows({"metrics": {"peak_rss_bytes": 1}}) == [] and rows({"metrics": None}) == []
    lines = dict(rows({"metrics": {"energy": {"label": "not measurable here: no meter"}},
                       "machine": {"summary": {"throttled": True, "swap_activity": True, "temp_c_max": 81.5},
                                   "during": {"throttle_reasons": ["gpu 3: sw thermal slowdown"],
                                              "swap_in_pages": 12, "swap_out_pages": 340}}}))
    assert lines["energy"] == "not measurable here: no meter"
    assert lines["thermal"] == "THROTTLED (gpu 3: sw thermal slowdown), max 81.5 C, SWAPPING (12 pages in, 340 out)"
    assert dict(rows({"machine": {"label": "not sampled: CR_MONITOR=0"}})) == {"machine": "not sampled: CR_MONITOR=0"}


def test_cr_platform_capture_keeps_what_the_monitor_reads(tmp_path):
    from cr.platform import capture

    capture(tmp_path / "cap")
    back = state.snapshot(CapturedSource(tmp_path / "cap"))
    live = state.snapshot(HostSource())
    assert isinstance(back["load_avg"], list) and isinstance(back["mem_available_bytes"], int)
    assert back["governor"] == live["governor"]
    if live["cpus"] == "unknown":  # no cpufreq on this host (a VM)
        assert back["cpus"] == "unknown"
    else:
        assert [c["governor"] for c in back["cpus"]] == [c["governor"] for c in live["cpus"]]
    assert (back["thermal"] == "unknown") == (live["thermal"] == "unknown")
    assert state.cpu_times(CapturedSource(tmp_path / "cap")) is not None
    assert (tmp_path / "cap" / "proc" / "vmstat").is_file()
