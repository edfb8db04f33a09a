"""The Platform record: what detection found, its fingerprint, PEP 508 markers, capabilities."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields

from .parse import arch_family

# The x86 and ARM feature flags worth naming as capabilities (the rest stay in cpu.flags).
_X86_CAPS = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16",
)
_ARM_CAPS = {"asimdhp": "fp16", "asimddp": "dotprod", "i8mm": "i8mm", "bf16": "bf16", "sve": "sve", "sve2": "sve2"}

# Marker values per os (PEP 508; what packaging.markers.default_environment() gives there).
_OS_MARKERS = {
    "linux": ("posix", "linux", "Linux"),
    "darwin": ("posix", "darwin", "Darwin"),
    "windows": ("nt", "win32", "Windows"),
    "freebsd": ("posix", "freebsd", "FreeBSD"),
}

FINGERPRINT_FORMAT = "v1"


@dataclass
class Cpu:
    model: str | None = None
    vendor: str | None = None
    cores: int | None = None
    threads: int | None = None
    flags: list[str] = field(default_factory=list)
    max_mhz: float | None = None


@dataclass
class Accelerator:
    vendor: str
    name: str
    memory_bytes: int | None = None
    driver: str | None = None
    cuda: str | None = None  # discrete GPUs: the driver's CUDA version; Jetson: the toolkit's
    compute_capability: str | None = None


@dataclass
class Android:
    version: str | None = None  # ro.build.version.release
    sdk: int | None = None  # ro.build.version.sdk
    manufacturer: str | None = None
    model: str | None = None
    termux: bool = False


@dataclass
class Jetson:
    l4t: str | None = None  # L4T release, e.g. 35.4.1 (/etc/nv_tegra_release)
    jetpack: str | None = None  # JetPack release of that L4T, where known


@dataclass
class Platform:
    """One machine as detected (this host, or captured files under a root directory).

    Every field may be None (or empty) when it could not be read. ``to_dict()`` gives the
    fields of a platform component (cr/store/schemas/platform.json) plus the fingerprint
    and capabilities; ``Platform.from_dict`` reads such a dict back.
    """

    os: str | None = None  # linux, android, darwin, windows
    distribution: str | None = None  # os-release ID: ubuntu, debian, raspbian
    distribution_version: str | None = None  # VERSION_ID: 22.04
    distribution_name: str | None = None  # PRETTY_NAME: Ubuntu 22.04.4 LTS
    kernel: str | None = None  # uname -r
    kernel_version: str | None = None  # uname -v
    arch: str | None = None  # uname -m: x86_64, aarch64, armv7l
    cpu: Cpu = field(default_factory=Cpu)
    memory_bytes: int | None = None
    accelerators: list[Accelerator] = field(default_factory=list)
    board: str | None = None  # Raspberry Pi 4 Model B, NVIDIA Jetson AGX Orin Developer Kit
    board_revision: str | None = None
    soc: str | None = None  # bcm2711, tegra234, GS201
    android: Android | None = None
    jetson: Jetson | None = None
    python: str | None = None  # full version: 3.11.2
    python_implementation: str | None = None  # CPython, PyPy
    python_implementation_version: str | None = None
    libc: str | None = None  # glibc, musl, bionic
    libc_version: str | None = None
    # Set when this userland runs under an emulator: "qemu-user" (QEMU user-mode). Then arch
    # is the emulated one (uname -m answers for the guest) and host_arch the kernel's.
    emulated: str | None = None
    host_arch: str | None = None

    # -- identity ------------------------------------------------------------------------

    def stable_facts(self) -> dict:
        """What the fingerprint covers: facts that stay put between runs and reboots.

        Not memory, frequency, kernel build or anything else that varies; a distribution
        upgrade, another GPU or another Python minor version is another platform.
        """
        py = re.match(r"\d+\.\d+", self.python or "")
        facts = {
            "format": FINGERPRINT_FORMAT,
            "os": self.os,
            "distribution": self.distribution,
            "distribution_version": self.distribution_version,
            "android": self.android.version if self.android else None,
            "arch": self.arch,
            "cpu_model": self.cpu.model,
            "cores": self.cpu.cores,
            "board": self.board,
            "accelerators": sorted(a.name for a in self.accelerators),
            "libc": self.libc,
            "libc_version": self.libc_version,
            "python": py.group(0) if py else None,
        }
        if self.emulated:  # an emulated Pi is not the Pi (only then: other fingerprints stay as they were)
            facts["emulated"] = self.emulated
            facts["host_arch"] = self.host_arch
        return facts

    @property
    def fingerprint(self) -> str:
        """16 hex digits: sha256 of :meth:`stable_facts` (a **contract**: locks record it)."""
        text = json.dumps(self.stable_facts(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    # -- derived views -------------------------------------------------------------------

    def markers(self) -> dict[str, str]:
        """The PEP 508 marker environment of this platform (not of the running interpreter).

        Unknown values are empty strings, so a marker about them is false rather than
        silently answered from the machine running cr.
        """
        version = self.python or ""
        mm = re.match(r"\d+\.\d+", version)
        impl = self.python_implementation or ""
        os_name, sys_platform, system = _OS_MARKERS.get(self.os or "", ("", "", ""))
        if self.os == "android":
            # PEP 738: from Python 3.13 on, Android is its own sys.platform and system
            new = mm is not None and tuple(map(int, mm.group(0).split("."))) >= (3, 13)
            os_name, sys_platform, system = ("posix", "android", "Android") if new else ("posix", "linux", "Linux")
        return {
            "os_name": os_name,
            "sys_platform": sys_platform,
            "platform_machine": self.arch or "",
            "platform_system": system,
            "platform_release": self.kernel or "",
            "platform_version": self.kernel_version or "",
            "python_version": mm.group(0) if mm else "",
            "python_full_version": version,
            "implementation_name": impl.lower(),
            "implementation_version": self.python_implementation_version or "",
            "platform_python_implementation": impl,
        }

    def capabilities(self) -> set[str]:
        """Short names for what this platform can do: os, arch, accelerators, boards, ISA
        extensions (nvidia-gpu, cuda, jetson, raspberry-pi, android, avx2, neon, ...)."""
        caps: set[str] = {c for c in (self.os, self.arch) if c}
        if self.android:
            caps.add("android")
            if self.android.termux:
                caps.add("termux")
        if self.jetson:
            caps.add("jetson")
        if self.board and self.board.startswith("Raspberry Pi"):
            caps.add("raspberry-pi")
            m = re.match(r"Raspberry Pi (\d+)", self.board)
            if m:
                caps.add(f"raspberry-pi-{m.group(1)}")
        if self.accelerators:
            caps.add("gpu")
        for acc in self.accelerators:
            if acc.vendor == "nvidia":
                caps.add("nvidia-gpu")
                if acc.cuda:
                    caps.add("cuda")
        if self.emulated:
            caps.add("emulated")
        flags = set(self.cpu.flags)
        if arch_family(self.arch) in ("x86", None):  # never a host's x86 flags on an emulated Arm
            caps.update(f for f in _X86_CAPS if f in flags)
        if flags & {"neon", "asimd"}:
            caps.add("neon")
        caps.update(cap for flag, cap in _ARM_CAPS.items() if flag in flags)
        return caps

    # -- (de)serialisation ---------------------------------------------------------------

    def to_dict(self) -> dict:
        """The platform component fields that are known (absent ones left out), plus
        fingerprint and capabilities."""
        data = _prune(asdict(self))
        data["fingerprint"] = self.fingerprint
        data["capabilities"] = sorted(self.capabilities())
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Platform":
        """A Platform from to_dict() output or a platform component meta (other keys ignored)."""
        own = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in own}
        values["cpu"] = _build(Cpu, values.get("cpu") or {})
        values["accelerators"] = [
            _build(Accelerator, a) for a in values.get("accelerators") or [] if isinstance(a, dict) and "vendor" in a and "name" in a
        ]
        for name, klass in (("android", Android), ("jetson", Jetson)):
            if isinstance(values.get(name), dict):
                values[name] = _build(klass, values[name])
        return cls(**values)


def _build(klass, data: dict):
    own = {f.name for f in fields(klass)}
    return klass(**{k: v for k, v in data.items() if k in own})


def _prune(value):
    """Drop None and empty containers, recursively."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value
