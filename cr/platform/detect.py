"""Platform detection: read what the machine says about itself, never fail on what it doesn't.

Each probe reads a few files (or runs a tool, with a timeout) through a Source and sets
the fields it could establish; anything unreadable or garbled is left absent. A probe
that raises anyway (a bug) becomes a warning naming the probe, and detection goes on.

On this host, detection reads a handful of /proc, /sys and /etc files and runs a tool
only where it exists (nvidia-smi; getprop on Android; ldd or the musl loader when the C
library does not say what it is), so it takes milliseconds.
"""
from __future__ import annotations

import os
import platform as _stdlib_platform
import re
import sys
import threading
from functools import lru_cache
from pathlib import Path

from ..errors import Conflict, NotFound
from ..events import reporter
from . import parse
from .model import Accelerator, Android, Jetson, Platform
from .sources import CapturedSource, HostSource, RecordingSource, Source

DEFAULT_TIMEOUT = 10.0  # nvidia-smi can take seconds to wake a GPU without persistence mode

ROOT_HINT = "give a directory of files captured from a machine (proc/, etc/, sys/, commands/<tool>.txt); `cr platform --capture DIR` makes one"

# CUDA device names and compute capabilities of the Jetson GPUs, by SoC.
_TEGRA_GPUS = {
    "tegra234": ("Orin", "8.7"),
    "tegra194": ("Xavier", "7.2"),
    "tegra186": ("NVIDIA Tegra X2", "6.2"),
    "tegra210": ("NVIDIA Tegra X1", "5.3"),
}
# JetPack release of each L4T release (NVIDIA's JetPack archive); unknown ones stay absent.
_JETPACK = {
    "32.6.1": "4.6", "32.7.1": "4.6.1", "32.7.2": "4.6.2", "32.7.3": "4.6.3", "32.7.4": "4.6.4",
    "32.7.5": "4.6.5", "35.1.0": "5.0.2", "35.2.1": "5.1", "35.3.1": "5.1.1", "35.4.1": "5.1.2",
    "35.5.0": "5.1.3", "35.6.0": "5.1.4", "36.3.0": "6.0", "36.4.0": "6.1", "36.4.3": "6.2",
}
_ANDROID_ABIS = {"arm64-v8a": "aarch64", "armeabi-v7a": "armv7l", "x86_64": "x86_64", "x86": "i686", "riscv64": "riscv64"}
_DMI_JUNK = {
    "", "to be filled by o.e.m.", "system product name", "system manufacturer", "default string",
    "not specified", "not applicable", "none", "o.e.m.", "oem", "n/a", "unknown", "type1productconfigid",
}
_TERMUX_PREFIX = "/data/data/com.termux/files/usr"
_CPU = "/sys/devices/system/cpu"
_NVIDIA_QUERY = "--query-gpu=name,memory.total,driver_version"


def detect(root: str | os.PathLike | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> Platform:
    """Describe this host (root None) or the machine captured under root.

    With a root, files are read under it (root/proc/cpuinfo, root/etc/os-release, ...)
    and no tool runs: their outputs are read from root/commands/<tool>.txt. On the host,
    each tool gets `timeout` seconds; one that hangs is killed and its facts are absent.
    Raises NotFound only when root is not a directory.
    """
    if root is None:
        return detect_from(HostSource(timeout))
    path = Path(root).expanduser()
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise NotFound(f"platform root {root} {what}", hint=ROOT_HINT)
    return detect_from(CapturedSource(path))


@lru_cache(maxsize=1)
def current() -> Platform:
    """This host's Platform, detected once per process (current.cache_clear() forgets it)."""
    return detect()


def capture(dest: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT) -> Platform:
    """Detect this host and save everything detection read under dest, in the root layout
    detect(root=dest) reads back (tool outputs in dest/commands/). Returns the Platform.

    The Raspberry Pi serial number in /proc/cpuinfo is zeroed; review a capture before
    sharing it all the same.
    """
    dest = Path(dest).expanduser()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise Conflict(f"capture directory {dest} exists and is not empty", hint="give a new or empty directory")
    dest.mkdir(parents=True, exist_ok=True)
    source = RecordingSource(dest, timeout)
    found = detect_from(source)
    from . import energy, state  # and what a benchmark's monitor reads (tests/fixtures/state)

    state.snapshot(source), state.cpu_times(source), energy.meters(source)
    # What the host answers without a tool, written as the tool would have printed it.
    uname = _stdlib_platform.uname()
    commands = dest / "commands"
    commands.mkdir(exist_ok=True)
    for flag, value in (("s", uname.system), ("r", uname.release), ("v", uname.version), ("m", uname.machine)):
        (commands / f"uname-{flag}.txt").write_text(value + "\n", encoding="utf-8")
    version = f"Python {_stdlib_platform.python_version()}\n"
    if found.python_implementation == "PyPy":
        version += f"[PyPy {found.python_implementation_version}]\n"
    (commands / "python3-version.txt").write_text(version, encoding="utf-8")
    if found.libc == "glibc" and not (commands / "ldd-version.txt").exists():
        source.tool("ldd-version", ["ldd", "--version"], merge_stderr=True)
    if found.android and found.android.termux:  # its existence is the fact
        (dest / _TERMUX_PREFIX.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return found


def detect_from(source: Source) -> Platform:
    """Run every probe against source; a probe that fails is reported and skipped."""
    probe = _Probe(source)
    for step in (
        probe.kernel, probe.os_release, probe.android, probe.cpu, probe.emulation, probe.memory, probe.board,
        probe.jetson, probe.gpus, probe.python, probe.libc, probe.finish,
    ):
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - one broken probe must not hide the others
            reporter().warning(
                f"platform detection: the {step.__name__} probe failed ({type(exc).__name__}: {exc});"
                " its facts are left out"
            )
    return probe.platform


class _Probe:
    """The probes, in order; later ones use what earlier ones found."""

    def __init__(self, source: Source):
        self.src = source
        self.platform = Platform()
        self.system: str | None = None  # uname -s
        self.cpuinfo: dict = {}
        self.compatible: list[str] = []
        self.read_any = False  # something Linux-shaped was read (decides os under a root)

    def _read(self, *paths: str) -> str | None:
        for path in paths:
            text = self.src.read(path)
            if text is not None:
                self.read_any = True
                return text
        return None

    def _tool_line(self, name: str) -> str | None:
        return parse.first_line(self.src.tool(name, [name]))

    def kernel(self) -> None:
        p = self.platform
        if self.src.live:
            uname = _stdlib_platform.uname()
            self.system, p.kernel = uname.system or None, uname.release or None
            p.kernel_version, p.arch = uname.version or None, uname.machine or None
            return
        full = parse.uname_a(self.src.tool("uname-a", ["uname", "-a"]))
        self.system = (
            self._tool_line("uname-s") or parse.first_line(self.src.read("/proc/sys/kernel/ostype")) or full.get("system")
        )
        p.kernel = self._tool_line("uname-r") or parse.first_line(self.src.read("/proc/sys/kernel/osrelease")) or full.get("release")
        p.kernel_version = (
            self._tool_line("uname-v") or parse.first_line(self.src.read("/proc/sys/kernel/version")) or full.get("version")
        )
        machine = self._tool_line("uname-m")
        p.arch = machine if machine and re.fullmatch(r"[\w.+-]+", machine) else full.get("machine")

    def os_release(self) -> None:
        info = parse.os_release(self._read("/etc/os-release", "/usr/lib/os-release"))
        p = self.platform
        p.distribution = parse.clean(info.get("ID"))
        p.distribution_version = parse.clean(info.get("VERSION_ID"))
        p.distribution_name = parse.clean(info.get("PRETTY_NAME")) or parse.clean(info.get("NAME"))

    def android(self) -> None:
        live_android = self.src.live and (self.src.exists("/system/build.prop") or "ANDROID_ROOT" in os.environ)
        if self.src.live and not live_android:
            return
        props = parse.getprop(self.src.tool("getprop", ["getprop"]))
        release, sdk = props.get("ro.build.version.release"), props.get("ro.build.version.sdk")
        if not (release or sdk):
            return
        read_prop = lambda *names: next((parse.clean(props[n]) for n in names if parse.clean(props.get(n))), None)  # noqa: E731
        termux = self.src.exists(_TERMUX_PREFIX) or (self.src.live and "com.termux" in os.environ.get("PREFIX", ""))
        a = Android(
            version=release or None,
            sdk=int(sdk) if sdk and sdk.isdigit() else None,
            manufacturer=read_prop("ro.product.manufacturer", "ro.product.vendor.manufacturer"),
            model=read_prop("ro.product.model", "ro.product.vendor.model", "ro.product.system.model"),
            termux=bool(termux),
        )
        p = self.platform
        p.android = a
        if a.model:
            maker = a.manufacturer or ""
            p.board = a.model if not maker or a.model.lower().startswith(maker.lower()) else f"{maker} {a.model}"
        p.soc = read_prop("ro.soc.model")
        if not p.arch:
            p.arch = _ANDROID_ABIS.get(props.get("ro.product.cpu.abi", ""))

    def cpu(self) -> None:
        info = self.cpuinfo = parse.cpuinfo(self._read("/proc/cpuinfo"))
        cpu = self.platform.cpu
        cpu.model, cpu.vendor, cpu.flags = info.get("model"), info.get("vendor"), info.get("flags", [])
        threads = (
            parse.cpu_list_count(self.src.read(f"{_CPU}/present"))
            or parse.cpu_list_count(self.src.read(f"{_CPU}/online"))
            or info.get("count")
            or (os.cpu_count() if self.src.live else None)
        )
        cpu.threads = threads
        if threads:
            if "cores_per_package" in info:  # x86: cores/siblings also covers hybrid P+E parts
                cpu.cores = max(1, round(threads * info["cores_per_package"] / info["threads_per_package"]))
            elif info.get("count") == threads and info.get("core_ids"):
                cpu.cores = info["core_ids"]
            else:
                smt = parse.cpu_list_count(self.src.read(f"{_CPU}/cpu0/topology/thread_siblings_list")) or 1
                cpu.cores = max(1, threads // smt)
        cpu.max_mhz = _whole(self._max_mhz() or info.get("mhz"))
        if not self.platform.arch:
            self.platform.arch = info.get("arch")

    def emulation(self) -> None:
        """QEMU user-mode: uname -m is the guest's, but the kernel (/proc/sys/kernel/arch),
        the CPU QEMU passes through (/proc/cpuinfo) and the QEMU binary mapped into this
        process (its task maps, which QEMU does not filter) are the host's."""
        p = self.platform
        guest = parse.arch_family(p.arch)
        if guest is None or p.android:
            return
        kernel = parse.first_line(self.src.read("/proc/sys/kernel/arch"))
        kernel = kernel if kernel and parse.ARCH_NAME.match(kernel) else None
        maps = self.src.read("/proc/thread-self/maps")
        if self.src.live and not parse.qemu_interpreter(maps):
            maps = self.src.read(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/maps")
        interpreter = parse.qemu_interpreter(maps)
        cpu_arch = self.cpuinfo.get("arch")
        foreign = [a for a in (kernel, cpu_arch) if _foreign(parse.arch_family(a), guest)]
        if not interpreter and not foreign:
            return
        p.emulated = "qemu-user"
        p.host_arch = foreign[0] if foreign else kernel
        if _foreign(parse.arch_family(cpu_arch), guest):
            # /proc/cpuinfo describes the host's CPU, not the one being emulated
            cpu = p.cpu
            cpu.model = cpu.vendor = cpu.max_mhz = None
            cpu.flags = []

    def _max_mhz(self) -> float | None:
        # big.LITTLE parts have one cpufreq policy per cluster: the fastest one counts
        policies = [n for n in self.src.listdir(f"{_CPU}/cpufreq") if re.fullmatch(r"policy\d+", n)]
        policies.sort(key=lambda n: int(n[6:]))
        values = [parse.khz_to_mhz(self.src.read(f"{_CPU}/cpufreq/{n}/cpuinfo_max_freq")) for n in policies[:16]]
        values = [v for v in values if v]
        if values:
            return max(values)
        return parse.khz_to_mhz(self.src.read(f"{_CPU}/cpu0/cpufreq/cpuinfo_max_freq"))

    def memory(self) -> None:
        self.platform.memory_bytes = parse.mem_total_bytes(self._read("/proc/meminfo"))

    def board(self) -> None:
        p = self.platform
        models = parse.dt_strings(self.src.read("/proc/device-tree/model") or self.src.read("/sys/firmware/devicetree/base/model"))
        self.compatible = parse.dt_strings(
            self.src.read("/proc/device-tree/compatible") or self.src.read("/sys/firmware/devicetree/base/compatible")
        )
        if self.compatible and not p.soc:
            soc = self.compatible[-1].partition(",")[2]
            p.soc = soc or None
        model = models[0] if models else self.cpuinfo.get("board_model")
        if model and not p.board:
            p.board, p.board_revision = parse.split_board_revision(model)
        if not p.board:
            vendor = self._dmi("sys_vendor")
            product = self._dmi("product_name")
            if product:
                p.board = product if not vendor or product.startswith(vendor) else f"{vendor} {product}"

    def _dmi(self, name: str) -> str | None:
        value = parse.clean(parse.first_line(self.src.read(f"/sys/class/dmi/id/{name}")))
        return value if value and value.lower() not in _DMI_JUNK else None

    def jetson(self) -> None:
        release = parse.tegra_release(self._read("/etc/nv_tegra_release"))
        tegra = any(c.startswith("nvidia,tegra") for c in self.compatible)
        if not release and not tegra:
            return
        l4t = release.get("l4t")
        self.platform.jetson = Jetson(l4t=l4t, jetpack=_JETPACK.get(l4t or ""))

    def gpus(self) -> None:
        p = self.platform
        query = self.src.tool("nvidia-smi-query", ["nvidia-smi", f"{_NVIDIA_QUERY},compute_cap", "--format=csv,noheader,nounits"])
        found = parse.nvidia_query(query, 4) or parse.nvidia_query(query, 3)
        if not found and query is None and self.src.live:
            # drivers before compute_cap was queryable (< 510) refuse the whole query
            query = self.src.tool("nvidia-smi-query", ["nvidia-smi", _NVIDIA_QUERY, "--format=csv,noheader,nounits"])
            found = parse.nvidia_query(query, 3)
        header = parse.nvidia_smi_header(self.src.tool("nvidia-smi", ["nvidia-smi"])) if found or p.jetson else {}
        if p.jetson:
            # the integrated GPU, once, even where JetPack 6's nvidia-smi also lists it
            soc = p.soc if p.soc in _TEGRA_GPUS else _tegra_from_board(p.board)
            name, cc = _TEGRA_GPUS.get(soc or "", (None, None))
            cuda = parse.cuda_toolkit_version(
                self.src.read("/usr/local/cuda/version.json"), self.src.read("/usr/local/cuda/version.txt")
            )
            if name:
                driver = header.get("driver") or (found[0].get("driver") if found else None)
                p.accelerators = [Accelerator("nvidia", name, driver=driver, cuda=cuda or header.get("cuda"), compute_capability=cc)]
            return
        p.accelerators = [
            Accelerator(
                "nvidia", gpu["name"], memory_bytes=gpu.get("memory_bytes"), driver=gpu.get("driver") or header.get("driver"),
                cuda=header.get("cuda"), compute_capability=gpu.get("compute_capability"),
            )
            for gpu in found
        ]

    def python(self) -> None:
        p = self.platform
        if self.src.live:
            p.python = _stdlib_platform.python_version()
            p.python_implementation = _stdlib_platform.python_implementation()
            p.python_implementation_version = _full_version(sys.implementation.version)
            return
        info = parse.python_version(self.src.tool("python3-version", ["python3", "--version"]))
        info = info or parse.python_version(self.src.tool("python-version", ["python", "--version"]))
        p.python = info.get("version")
        p.python_implementation = info.get("implementation")
        p.python_implementation_version = info.get("implementation_version")

    def libc(self) -> None:
        p = self.platform
        if p.android:
            p.libc = "bionic"
            return
        info: dict = {}
        if self.src.live:
            try:
                name, _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
            except (AttributeError, ValueError, OSError):
                name, version = "", ""
            if name == "glibc":
                info = {"libc": "glibc", "version": version}
            else:
                loaders = [n for n in self.src.listdir("/lib") if re.fullmatch(r"ld-musl-[\w-]+\.so\.1", n)]
                if loaders:  # musl's loader prints its version when run by its own name
                    info = parse.ldd_version(self.src.tool("ldd-version", [f"/lib/{loaders[0]}"], merge_stderr=True))
                    info = info or {"libc": "musl"}
                elif self.system == "Linux":
                    info = parse.ldd_version(self.src.tool("ldd-version", ["ldd", "--version"], merge_stderr=True))
        else:
            info = parse.ldd_version(self.src.tool("ldd-version", ["ldd", "--version"], merge_stderr=True))
            if not info:
                info = parse.libc_from_file_names(self._lib_names())
        p.libc = info.get("libc")
        p.libc_version = info.get("version") or None

    def _lib_names(self) -> list[str]:
        names: list[str] = []
        for folder in ("/lib", "/lib64", "/usr/lib"):
            entries = self.src.listdir(folder)
            names += entries
            for sub in entries:
                if re.fullmatch(r"\w+-linux-\w+", sub):  # multiarch: /lib/aarch64-linux-gnu
                    names += self.src.listdir(f"{folder}/{sub}")
        return names

    def finish(self) -> None:
        p = self.platform
        if p.android:
            p.os = "android"
        elif self.system:
            p.os = self.system.lower()
        elif self.read_any:
            p.os = "linux"  # /proc and /etc/os-release are Linux-only


def _foreign(family: str | None, guest: str) -> bool:
    """Another instruction set than the guest's; 32-bit Arm on a 64-bit Arm kernel is native."""
    return family is not None and family != guest and {family, guest} != {"arm", "arm64"}


def _whole(value: float | None):
    return int(value) if value is not None and float(value).is_integer() else value


def _full_version(info) -> str:
    """sys.implementation.version as PEP 508's implementation_version writes it."""
    version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        version += info.releaselevel[0] + str(info.serial)
    return version


def _tegra_from_board(board: str | None) -> str | None:
    text = board or ""
    for marker, soc in (("Orin", "tegra234"), ("Xavier", "tegra194"), ("TX2", "tegra186"), ("Nano", "tegra210"), ("TX1", "tegra210")):
        if marker in text:
            return soc
    return None
