"""Where reefkit's files live: the data folders it ships and the user's CR_HOME.

The data folders (repo/, recipes/, actions/, dashboard/) sit at the top of a source
checkout and inside the wheel under cr/_data/ (see pyproject.toml); both are found here,
so the rest of the code never guesses.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import StoreError

_PACKAGE_DIR = Path(__file__).resolve().parent
DATA_FOLDERS = ("repo", "recipes", "actions", "dashboard")


def data_dir(name: str) -> Path:
    """Path of a shipped data folder: the installed copy first, then the source checkout."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}")
    installed = _PACKAGE_DIR / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent / name
    if checkout.is_dir():
        return checkout
    raise StoreError(
        f"reefkit's data folder {name}/ is missing (looked in {installed} and {checkout})",
        hint="reinstall reefkit: pip install --force-reinstall reefkit",
    )


def cr_home() -> Path:
    """The user's store: $CR_HOME, else the platform's user data directory for reefkit."""
    env = os.environ.get("CR_HOME")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs  # only when needed: it costs start-up time

    return Path(platformdirs.user_data_dir("reefkit", appauthor=False))


def ensure_home() -> Path:
    """CR_HOME, created if needed; a clear error when it cannot be used for writing."""
    home = cr_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe = home / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StoreError(
            f"CR_HOME {home} is not writable ({exc.strerror or exc})",
            hint="set CR_HOME to a directory you can write, e.g. export CR_HOME=~/.reefkit",
        ) from None
    return home
