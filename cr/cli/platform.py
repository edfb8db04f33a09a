"""cr platform: describe this machine (or one captured as files)."""
from __future__ import annotations

import click

from . import output


@click.command("platform")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the fields of a platform component).")
@click.option("--root", metavar="DIR", help="Describe the machine captured under DIR (proc/, etc/, sys/, commands/<tool>.txt) instead of this one.")
@click.option("--markers", "markers", is_flag=True, help="Print the PEP 508 marker environment (JSON) that recipes and solutions are evaluated against.")
@click.option("--capture", metavar="DIR", help="Also save what detection read on this host under DIR, in the layout --root reads.")
def platform_(as_json, root, markers, capture):
    """Describe this machine: OS, arch, CPU, memory, accelerators, board, Python, libc, fingerprint."""
    from ..platform import capture as capture_host
    from ..platform import detect

    if root and capture:
        raise click.UsageError("--root and --capture exclude each other: a capture is taken from this host")
    found = capture_host(capture) if capture else detect(root)
    if markers:
        output.emit_json(found.markers())
    elif as_json:
        output.emit_json(found.to_dict())
    else:
        for label, value in summary(found):
            click.echo(f"{label + ':':<14}{value}")
    if capture:
        click.echo(f"captured into {capture}; `cr platform --root {capture}` reads it back (review before sharing)", err=True)


def summary(p) -> list[tuple[str, str]]:
    """(label, text) lines of the human summary; unknown facts say so."""
    unknown = "unknown"
    os_text = p.distribution_name or " ".join(x for x in (p.distribution, p.distribution_version) if x) or p.os or unknown
    if p.android:
        os_text = "Android " + (p.android.version or "") + (f" (SDK {p.android.sdk})" if p.android.sdk else "")
        os_text += ", Termux" if p.android.termux else ""
    if p.kernel:
        os_text += f", kernel {p.kernel}"
    cpu = p.cpu
    counts = ", ".join(x for x in (
        f"{cpu.cores} core{'s' if cpu.cores != 1 else ''}" if cpu.cores else "",
        f"{cpu.threads} threads" if cpu.threads and cpu.threads != cpu.cores else "",
        f"up to {cpu.max_mhz:g} MHz" if cpu.max_mhz else "",
    ) if x)
    lines = [
        ("OS", os_text),
        ("Arch", (p.arch or unknown) + (f" (emulated: {p.emulated} on {p.host_arch or unknown})" if p.emulated else "")),
        ("CPU", (cpu.model or unknown) + (f" ({counts})" if counts else "")),
        ("Memory", _gib(p.memory_bytes) if p.memory_bytes else unknown),
        ("Accelerators", "; ".join(_accelerators(p.accelerators)) or "none found"),
    ]
    if p.board:
        lines.append(("Board", p.board + (f" (rev {p.board_revision})" if p.board_revision else "") + (f", {p.soc}" if p.soc else "")))
    if p.jetson:
        lines.append(("Jetson", ", ".join(x for x in (
            f"L4T {p.jetson.l4t}" if p.jetson.l4t else "L4T unknown",
            f"JetPack {p.jetson.jetpack}" if p.jetson.jetpack else "",
        ) if x)))
    lines += [
        ("Python", " ".join(x for x in (p.python_implementation, p.python) if x) or unknown),
        ("libc", " ".join(x for x in (p.libc, p.libc_version) if x) or unknown),
        ("Capabilities", " ".join(sorted(p.capabilities())) or "none"),
        ("Fingerprint", p.fingerprint),
    ]
    return lines


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _accelerators(accs) -> list[str]:
    """Identical devices grouped: '8x NVIDIA H100 80GB HBM3 (79.6 GiB, driver 535.183.01, CUDA 12.2, cc 9.0)'."""
    groups: dict[str, int] = {}
    for a in accs:
        details = ", ".join(x for x in (
            _gib(a.memory_bytes) if a.memory_bytes else "",
            f"driver {a.driver}" if a.driver else "",
            f"CUDA {a.cuda}" if a.cuda else "",
            f"cc {a.compute_capability}" if a.compute_capability else "",
        ) if x)
        text = a.name + (f" ({details})" if details else "")
        groups[text] = groups.get(text, 0) + 1
    return [f"{n}x {text}" if n > 1 else text for text, n in groups.items()]
