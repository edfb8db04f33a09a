"""Parsers for what platform detection reads: pure functions, text in, facts out.

Each parser takes whatever text it is given (real, truncated, garbled or empty) and
returns only what it recognises; none raises on bad input. The formats are those the
kernel and the tools print (/proc/cpuinfo, /proc/meminfo, /etc/os-release, nvidia-smi,
getprop, ldd --version, ...); tests/fixtures/platforms/ holds captured real examples.
"""
from __future__ import annotations

import json
import re

# (CPU implementer, CPU part) from an ARM /proc/cpuinfo -> core name. The same table as
# util-linux lscpu (lscpu-arm.c), reduced to cores found in boards, phones and servers.
_ARM_PARTS = {
    0x41: {  # ARM Ltd
        0xB76: "ARM1176", 0xC07: "Cortex-A7", 0xC08: "Cortex-A8", 0xC09: "Cortex-A9",
        0xC0D: "Cortex-A17", 0xC0E: "Cortex-A17", 0xC0F: "Cortex-A15",
        0xD01: "Cortex-A32", 0xD02: "Cortex-A34", 0xD03: "Cortex-A53", 0xD04: "Cortex-A35",
        0xD05: "Cortex-A55", 0xD06: "Cortex-A65", 0xD07: "Cortex-A57", 0xD08: "Cortex-A72",
        0xD09: "Cortex-A73", 0xD0A: "Cortex-A75", 0xD0B: "Cortex-A76", 0xD0C: "Neoverse-N1",
        0xD0D: "Cortex-A77", 0xD0E: "Cortex-A76AE", 0xD40: "Neoverse-V1", 0xD41: "Cortex-A78",
        0xD42: "Cortex-A78AE", 0xD43: "Cortex-A65AE", 0xD44: "Cortex-X1", 0xD46: "Cortex-A510",
        0xD47: "Cortex-A710", 0xD48: "Cortex-X2", 0xD49: "Neoverse-N2", 0xD4A: "Neoverse-E1",
        0xD4B: "Cortex-A78C", 0xD4C: "Cortex-X1C", 0xD4D: "Cortex-A715", 0xD4E: "Cortex-X3",
        0xD4F: "Neoverse-V2", 0xD80: "Cortex-A520", 0xD81: "Cortex-A720", 0xD82: "Cortex-X4",
        0xD84: "Neoverse-V3", 0xD85: "Cortex-X925", 0xD87: "Cortex-A725", 0xD8E: "Neoverse-N3",
    },
    0x42: {0x516: "ThunderX2"},  # Broadcom
    0x43: {0x0AF: "ThunderX2 99xx"},  # Cavium
    0x46: {0x001: "A64FX"},  # Fujitsu
    0x48: {0xD01: "Kunpeng-920"},  # HiSilicon
    0x4E: {0x000: "Denver", 0x003: "Denver 2", 0x004: "Carmel"},  # NVIDIA
    0x51: {  # Qualcomm
        0x800: "Kryo 2XX Gold", 0x801: "Kryo 2XX Silver", 0x802: "Kryo 3XX Gold",
        0x803: "Kryo 3XX Silver", 0x804: "Kryo 4XX Gold", 0x805: "Kryo 4XX Silver",
        0xC00: "Falkor", 0x001: "Oryon",
    },
    0x53: {0x001: "Exynos-M1", 0x002: "Exynos-M3"},  # Samsung
    0x61: {0x022: "Icestorm", 0x023: "Firestorm"},  # Apple
    0xC0: {0xAC3: "Ampere-1", 0xAC4: "Ampere-1a"},  # Ampere
}
_ARM_IMPLEMENTERS = {
    0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
    0x4E: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm", 0x53: "Samsung", 0x61: "Apple",
    0x6D: "Microsoft", 0xC0: "Ampere",
}

ARCH_NAME = re.compile(
    r"^(x86_64|amd64|i[3-6]86|aarch64|arm64|armv\d+\w*|ppc64le|ppc64|s390x|riscv64|riscv32"
    r"|mips\w*|loongarch64|sparc64)$"
)
_NOT_A_VALUE = {"", "[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]", "unknown"}


def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return int(str(text).strip(), base)
    except (TypeError, ValueError):
        return None


def _float(text: str | None) -> float | None:
    try:
        value = float(str(text).strip())
    except (TypeError, ValueError):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def clean(value: str | None, collapse: bool = True) -> str | None:
    """value stripped (inner whitespace collapsed unless collapse is False), or None if
    empty or garbled (undecodable bytes, control characters): a garbled fact is absent."""
    if value is None:
        return None
    value = " ".join(value.split()) if collapse else value.strip()
    return value if value and value.isprintable() and "\ufffd" not in value else None


def first_line(text: str | None) -> str | None:
    """The first non-empty line, stripped (spacing inside kept, as in uname -v);
    None for empty or garbled text."""
    for line in (text or "").splitlines():
        if line.strip():
            return clean(line, collapse=False)
    return None


# --- /etc/os-release --------------------------------------------------------------------

_SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def os_release(text: str | None) -> dict[str, str]:
    """KEY=value pairs of an os-release file (values unquoted, shell escapes undone)."""
    out: dict[str, str] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not _SHELL_NAME.match(key):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = re.sub(r'\\(["\\$`])', r"\1", value)
        elif value[:1] in "\"'":
            continue  # an unterminated quote: garbled, not a value
        out[key] = value
    return out


# --- /proc/cpuinfo ----------------------------------------------------------------------

def cpuinfo_blocks(text: str | None) -> tuple[list[dict[str, str]], dict[str, str]]:
    """(one dict per 'processor' block, the other keys such as Hardware/Revision/Model).

    Keys keep their case: x86's numeric 'model' and the Raspberry Pi's 'Model' differ.
    """
    processors: list[dict[str, str]] = []
    other: dict[str, str] = {}
    for chunk in re.split(r"\n\s*\n", (text or "").replace("\r\n", "\n")):
        block: dict[str, str] = {}
        for line in chunk.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip():
                block.setdefault(key.strip(), value.strip())
        if not block:
            continue
        if _int(block.get("processor")) is not None:
            processors.append(block)
        else:
            for key, value in block.items():
                other.setdefault(key, value)
    return processors, other


def arm_core_name(implementer: str | None, part: str | None) -> str | None:
    impl, num = _int(implementer, 16), _int(part, 16)
    if impl is None or num is None:
        return None
    return _ARM_PARTS.get(impl, {}).get(num)


def cpuinfo(text: str | None) -> dict:
    """Facts from /proc/cpuinfo: model, vendor, flags, count, cores_per_package,
    threads_per_package, core_ids, mhz, arch (a guess from the CPU itself), and the
    board trailer keys hardware/revision/board_model (Raspberry Pi). Missing -> absent."""
    processors, other = cpuinfo_blocks(text)
    first = processors[0] if processors else other
    facts: dict = {}
    if processors:
        facts["count"] = len(processors)

    flags_text = first.get("flags") or first.get("Features") or ""
    flags = list(dict.fromkeys(f for f in flags_text.split() if re.fullmatch(r"[\w.+-]+", f)))
    if flags:
        facts["flags"] = flags

    # ARM: name the cores from implementer/part ("ARMv7 Processor rev 3 (v7l)" says little);
    # big.LITTLE parts are listed in the order the kernel numbers them.
    arm_names = []
    for block in processors or [first]:
        name = arm_core_name(block.get("CPU implementer"), block.get("CPU part"))
        if name and name not in arm_names:
            arm_names.append(name)
    impl = _int(first.get("CPU implementer"), 16)
    model = clean(" + ".join(arm_names) or first.get("model name") or first.get("Processor") or first.get("cpu"))
    if model:
        facts["model"] = model
    vendor = clean(first.get("vendor_id")) or (_ARM_IMPLEMENTERS.get(impl) if impl is not None else None)
    if vendor:
        facts["vendor"] = vendor

    siblings, cpu_cores = _int(first.get("siblings")), _int(first.get("cpu cores"))
    if siblings and cpu_cores and 0 < cpu_cores <= siblings:
        facts["threads_per_package"], facts["cores_per_package"] = siblings, cpu_cores
    core_ids = {(b.get("physical id"), b.get("core id")) for b in processors if "core id" in b}
    if core_ids:
        facts["core_ids"] = len(core_ids)

    mhz = [m for m in (_float(b.get("cpu MHz")) for b in processors) if m and m > 0]
    if mhz:
        facts["mhz"] = max(mhz)

    arch = _arch_from_cpuinfo(first, flags)
    if arch:
        facts["arch"] = arch
    for key, name in (("Hardware", "hardware"), ("Revision", "revision"), ("Model", "board_model")):
        value = clean(other.get(key))
        if value:
            facts[name] = value
    return facts


def _arch_from_cpuinfo(first: dict[str, str], flags: list[str]) -> str | None:
    if first.get("vendor_id") or "fpu" in flags:
        return "x86_64" if "lm" in flags else "i686"
    arch = (first.get("CPU architecture") or "").strip()
    names = f"{first.get('model name', '')} {first.get('Processor', '')}"
    if arch == "8" or "aarch64" in names.lower():
        return "aarch64"
    m = re.search(r"\((v\d+l)\)", names)
    if m:
        return "arm" + m.group(1)  # "(v7l)" -> armv7l, as uname -m says on such kernels
    if arch.isdigit():
        return f"armv{arch}l"
    return None


def cpu_list_count(text: str | None) -> int | None:
    """Number of CPUs in a kernel cpu list such as '0-3,6,8-11'; None if garbled."""
    line = first_line(text)
    if not line:
        return None
    count = 0
    for part in line.split(","):
        lo, sep, hi = part.partition("-")
        a, b = _int(lo), (_int(hi) if sep else _int(lo))
        if a is None or b is None or b < a:
            return None
        count += b - a + 1
    return count or None


def khz_to_mhz(text: str | None) -> float | None:
    khz = _int(first_line(text))
    return round(khz / 1000, 1) if khz and khz > 0 else None


# --- /proc/meminfo ----------------------------------------------------------------------

def mem_total_bytes(text: str | None) -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB\s*$", text or "", re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


# --- device tree (/proc/device-tree/model, compatible) ---------------------------------

def dt_strings(text: str | None) -> list[str]:
    """A device-tree string property: NUL-terminated, NUL-separated when a list."""
    return [s for s in (clean(part) for part in (text or "").split("\0")) if s]


def split_board_revision(model: str) -> tuple[str, str | None]:
    """'Raspberry Pi 4 Model B Rev 1.4' -> ('Raspberry Pi 4 Model B', '1.4')."""
    m = re.match(r"^(.*\S)\s+Rev\s+(\S+)$", model)
    return (m.group(1), m.group(2)) if m else (model, None)


# --- NVIDIA ----------------------------------------------------------------------------

def nvidia_query(text: str | None, fields: int = 4) -> list[dict]:
    """Lines of `nvidia-smi --query-gpu=name,memory.total,driver_version[,compute_cap]
    --format=csv,noheader,nounits`, one dict per GPU. Error messages yield nothing."""
    gpus = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != fields or not parts[0] or parts[0].lower() in _NOT_A_VALUE:
            continue
        gpu: dict = {"name": parts[0]}
        mem = parts[1]
        if mem.isdigit():
            gpu["memory_bytes"] = int(mem) * 1024 * 1024  # MiB with nounits
        elif mem.lower() not in _NOT_A_VALUE:
            continue  # not a query line
        if re.fullmatch(r"\d+(\.\d+)+", parts[2]):
            gpu["driver"] = parts[2]
        if fields > 3 and re.fullmatch(r"\d+\.\d+", parts[3]):
            gpu["compute_capability"] = parts[3]
        gpus.append(gpu)
    return gpus


def nvidia_smi_header(text: str | None) -> dict:
    """Driver and CUDA versions from the header of plain `nvidia-smi`."""
    out = {}
    m = re.search(r"CUDA Version:\s*(\d+\.\d+)", text or "")
    if m:
        out["cuda"] = m.group(1)
    m = re.search(r"Driver Version:\s*(\d+(?:\.\d+)+)", text or "")
    if m:
        out["driver"] = m.group(1)
    return out


def tegra_release(text: str | None) -> dict:
    """/etc/nv_tegra_release: '# R35 (release), REVISION: 4.1, ...' -> {'l4t': '35.4.1'}."""
    m = re.search(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+(?:\.\d+)*)", text or "")
    if not m:
        return {}
    out = {"l4t": f"{m.group(1)}.{m.group(2)}"}
    board = re.search(r"BOARD:\s*([\w.-]+)", text or "")
    if board:
        out["board"] = board.group(1)
    return out


def cuda_toolkit_version(version_json: str | None, version_txt: str | None) -> str | None:
    """major.minor of the CUDA toolkit from /usr/local/cuda/version.json (or version.txt)."""
    if version_json:
        try:
            data = json.loads(version_json)
            version = data["cuda"]["version"]
        except (ValueError, KeyError, TypeError):
            version = None
        m = re.match(r"(\d+\.\d+)", version) if isinstance(version, str) else None
        if m:
            return m.group(1)
    m = re.search(r"CUDA Version\s+(\d+\.\d+)", version_txt or "")
    return m.group(1) if m else None


# --- Android --------------------------------------------------------------------------

def getprop(text: str | None) -> dict[str, str]:
    """`getprop` output, '[ro.product.model]: [Pixel 7]' per line."""
    props = {}
    for line in (text or "").splitlines():
        m = re.match(r"^\[([^\]]+)\]:\s*\[(.*)\]\s*$", line)
        if m:
            props[m.group(1)] = m.group(2)
    return props


# --- uname, python, libc --------------------------------------------------------------

def uname_a(text: str | None) -> dict[str, str]:
    """GNU `uname -a`: 'Linux host 6.1.21-v8+ #1642 SMP PREEMPT Mon Apr 3 ... aarch64 GNU/Linux'.

    The version field holds spaces, so the machine is found as the last word that names
    an architecture, and the version is what lies between release and machine.
    """
    tokens = (first_line(text) or "").split()
    if len(tokens) < 3:
        return {}
    out = {"system": tokens[0], "release": tokens[2]}
    for i in range(len(tokens) - 1, 2, -1):
        if ARCH_NAME.match(tokens[i]):
            out["machine"] = tokens[i]
            # GNU uname repeats the machine as processor and hardware platform
            first = i
            while first - 1 > 2 and tokens[first - 1] == tokens[i]:
                first -= 1
            if first > 3:
                out["version"] = " ".join(tokens[3:first])
            break
    return out


def python_version(text: str | None) -> dict[str, str]:
    """`python3 --version`: 'Python 3.11.2' (PyPy adds '[PyPy 7.3.15 ...]' on a second line)."""
    m = re.search(r"^Python (\d+\.\d+\.\d+\S*)", text or "", re.MULTILINE)
    if not m:
        return {}
    out = {"version": m.group(1), "implementation": "CPython", "implementation_version": m.group(1)}
    pypy = re.search(r"\[PyPy (\d+\.\d+\.\d+)", text or "")
    if pypy:
        out["implementation"], out["implementation_version"] = "PyPy", pypy.group(1)
    return out


def ldd_version(text: str | None) -> dict[str, str]:
    """`ldd --version` (stdout and stderr): glibc 'ldd (Ubuntu GLIBC 2.35-0ubuntu3.7) 2.35'
    or musl 'musl libc (x86_64)\\nVersion 1.2.4'."""
    text = text or ""
    if re.search(r"musl libc", text):
        m = re.search(r"^Version\s+(\d+(?:\.\d+)+)", text, re.MULTILINE)
        return {"libc": "musl", **({"version": m.group(1)} if m else {})}
    line = first_line(text) or ""
    if re.search(r"GLIBC|GNU libc|glibc", line, re.IGNORECASE):
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)\s*$", line)
        return {"libc": "glibc", **({"version": m.group(1)} if m else {})}
    return {}


def libc_from_file_names(names: list[str]) -> dict[str, str]:
    """libc from loader/library file names: ld-musl-*.so.1, ld-linux*.so.*, libc-2.31.so."""
    for name in names:
        if re.fullmatch(r"ld-musl-[\w-]+\.so\.1", name):
            return {"libc": "musl"}
    for name in names:
        m = re.fullmatch(r"libc-(\d+\.\d+)\.so", name)  # glibc before 2.34 named its file so
        if m:
            return {"libc": "glibc", "version": m.group(1)}
    for name in names:
        if re.fullmatch(r"ld-linux[\w.-]*\.so\.\d+|libc\.so\.6", name):
            return {"libc": "glibc"}
    return {}


# --- emulation (QEMU user-mode) ---------------------------------------------------------

_QEMU_MAPPING = re.compile(r"(?:^|/)(qemu-[\w.+-]+?)(?:-static)?(?:\s|$)|(?:^|/)qemu-binfmt/([\w.+-]+?)-binfmt-P(?:\s|$)")


def arch_family(arch: str | None) -> str | None:
    """The instruction set family of a machine name: x86 (x86_64, i686, amd64), arm64
    (aarch64, arm64), arm (armv7l, armv6l), else the name itself; None for None/empty."""
    name = (arch or "").strip().lower()
    if not name:
        return None
    if name in ("x86_64", "amd64") or re.fullmatch(r"i[3-6]86", name):
        return "x86"
    if name in ("aarch64", "arm64", "armv8b", "aarch64_be"):
        return "arm64"
    if name.startswith("arm"):
        return "arm"
    return name


def qemu_interpreter(maps: str | None) -> str | None:
    """The QEMU user-mode binary mapped into a process, from its /proc/<pid>/task/<tid>/maps
    (QEMU answers /proc/self/maps itself, with the guest's mappings only; the task path
    shows the real ones): 'qemu-aarch64' for /usr/bin/qemu-aarch64-static or
    /usr/libexec/qemu-binfmt/aarch64-binfmt-P. None when no QEMU binary is mapped."""
    for line in (maps or "").splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        m = _QEMU_MAPPING.search(path)
        if m:
            name = m.group(1) or f"qemu-{m.group(2)}"
            return clean(name)
    return None
