"""Durations as people write them: '5m', '90s', '1m30s', '2h' to seconds and back.

    parse_duration("1m30s", "--sustained")   # 90.0; CRError naming where and the value otherwise
    format_duration(130)                      # '2m10s'

Standard library only (the foundation: the device side uses it too).
"""
from __future__ import annotations

import math
import re

from .errors import CRError

MAX_DURATION_S = 24 * 3600.0

_DURATION = re.compile(r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?$")


def parse_duration(text, where: str = "--sustained") -> float:
    """Seconds of '5m', '90s', '1m30s', '1.5m', '2h' (or a bare number of seconds); CRError
    naming where and the value otherwise (zero, negative, no unit we know, above 24 h)."""
    hint = "give a duration such as 5m, 90s or 1m30s (units h, m, s; a bare number is seconds; at most 24h)"
    if isinstance(text, bool) or text is None:
        raise CRError(f"{where}: {text!r} is not a duration", hint=hint)
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        value = str(text).strip().lower()
        try:
            seconds = float(value)
        except ValueError:
            match = _DURATION.match(value) if value else None
            if not match or not any(match.groupdict().values()):
                raise CRError(f"{where}: {str(text)!r} is not a duration", hint=hint) from None
            parts = match.groupdict()
            seconds = sum(float(parts[k] or 0) * f for k, f in (("h", 3600), ("m", 60), ("s", 1)))
    if not math.isfinite(seconds) or seconds <= 0:
        raise CRError(f"{where}: {text!r} is not a positive duration", hint=hint)
    if seconds > MAX_DURATION_S:
        raise CRError(f"{where}: {text!r} is longer than 24h", hint=hint)
    return seconds


def format_duration(seconds: float) -> str:
    """'2m10s', '45s', '1.5s', '1h5m'."""
    if seconds < 60:
        return f"{seconds:.0f}s" if abs(seconds - round(seconds)) < 0.05 else f"{seconds:.1f}s"
    whole = int(round(seconds))
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s or not (h or m) else "")
