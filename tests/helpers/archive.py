"""Archive test helpers: a registered repo, running cr, reading zip members (test_archive, test_archive_hostile)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

from conftest import _env


ARCHIVE_CMDS = ("pack", "unpack")


def _registered() -> bool:
    from cr.cli.main import cli

    return all(name in cli.list_commands(None) for name in ARCHIVE_CMDS)


# Until cr/cli/main.py registers the commands, the CLI is started through a shim that
# registers them first; once registered, this is exactly `python -m cr`.
_SHIM = (
    "import sys\n"
    "from cr.cli import main as m, archive as a\n"
    "for c in (a.pack, a.unpack):\n"
    "    if c.name not in m.cli.commands: m.cli.add_command(c)\n"
    "m.main(sys.argv[1:])\n"
)


def cr(home: Path, *args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    prefix = ["-m", "cr"] if _registered() else ["-c", _SHIM]
    return subprocess.run(
        [sys.executable, *prefix, *map(str, args)], capture_output=True, text=True,
        env=_env({"CR_HOME": str(home)}), cwd=cwd, timeout=120,
    )


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha_file(path: Path) -> str:
    return sha(path.read_bytes())


def leftovers(home: Path) -> list[str]:
    """Everything under CR_HOME but its registry files (what a failed unpack must not leave)."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.name not in ("repos.json", "repos.json.lock", "index.sqlite", "index.sqlite-wal", "index.sqlite-shm"))


REPO_META = {"name": "evil-sol-1.0.0", "uid": "00112233445566bb", "version": "1.0.0"}


def _info(name: str, *, mode: int = 0o100644, method: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
    info.create_system = 3
    info.external_attr = mode << 16
    info.compress_type = method
    return info


def _write(path: Path, members, manifest: bytes | None) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names made on purpose
        with zipfile.ZipFile(path, "w") as zf:
            for item in members:
                info, data = item if isinstance(item[0], zipfile.ZipInfo) else (_info(item[0]), item[1])
                zf.writestr(info, data)
            if manifest is not None:
                zf.writestr(_info("manifest.json"), manifest)
    return path
