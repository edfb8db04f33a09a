"""Fast machine-state settings and a fake energy meter (test_machine_state and its dashboard test)."""
from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path


FAST = ["--backend", "null", "--min-duration", "1", "--min-queries", "10", "--warmup", "0"]


def _fake_tool(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport sys, time\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _meter_script(tmp_path, body: str) -> str:
    _fake_tool(tmp_path / "bin", "meter", body)
    return str(tmp_path / "bin" / "meter")
