"""Size limits applied before an archive is unpacked (all checked on the zip's directory,
then enforced again on the bytes actually read)."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import CRError

GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What an archive may hold. The defaults fit any real solution and stop zip bombs.

    max_ratio applies to entries of at least ratio_min_bytes (a tiny file may compress
    far better than a large one legitimately can): an entry that inflates more than
    max_ratio times its compressed size is refused. max_total_ratio applies to the whole
    archive once it unpacks to at least ratio_min_bytes: many entries each just under
    ratio_min_bytes (300 files of 1 MiB of zeros in a 772 KB zip) are one bomb too.
    """

    max_entry_bytes: int = 2 * GiB
    max_total_bytes: int = 8 * GiB
    max_entries: int = 100_000
    max_ratio: float = 200.0
    max_total_ratio: float = 200.0
    ratio_min_bytes: int = 1 * MiB
    max_manifest_bytes: int = 64 * MiB

    def with_(self, **changes) -> "Limits":
        """A copy with the given limits changed (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


DEFAULT = Limits()

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000**2, "mb": 1000**2, "mib": MiB,
          "g": 1000**3, "gb": 1000**3, "gib": GiB, "t": 1000**4, "tb": 1000**4, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Bytes from '2GiB', '500MB', '100k' or a plain number; CRError for anything else."""
    if isinstance(text, int):
        return text
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise CRError(f"invalid size {text!r}", hint="give bytes, optionally with a unit: 500MB, 2GiB, 100k")
    return int(float(match.group(1)) * _UNITS[unit])


def human(size: int) -> str:
    """1536 -> '1.5 KiB' (binary units, one decimal)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
