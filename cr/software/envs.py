"""Software envs: a detected or installed software at an exact version, registered in CR_HOME.

Every env is one JSON file, ``CR_HOME/envs/<name>/<env id>/env.json``; an installed env
also owns ``<env id>/prefix/`` (pip --target, extracted downloads). The JSON is written
last and atomically, so an env exists only once its install has completed: a crash or a
failed install leaves nothing registered (the installer builds in a temp dir and renames).

An env whose prefix (or, for detected executables, whose file) has disappeared is noticed
when envs are listed, reported as a warning and dropped, never used.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..events import reporter
from ..fsutil import atomic_write_json
from ..jsonio import InvalidJSON, load_file
from ..paths import cr_home, ensure_home

ENV_FILE = "env.json"
ENV_FORMAT = 1
# Variables whose values are path lists, composed in this order: the env's own entries
# first (later envs in a lock come after earlier ones), then the parent environment's.
PATH_VARS = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH", "PKG_CONFIG_PATH")


@dataclass
class SoftwareEnv:
    """One usable software at one exact version on this platform.

    origin: 'detected' (found on the host) or 'installed' (by cr into prefix).
    source: how it got there: 'system', 'pip', 'apt', 'download', 'script', 'python' (the
    interpreter itself), ...
    exports: variables to compose into a child environment; values of PATH_VARS are
    lists of paths prepended, other variables are plain strings.
    location: the file or directory whose disappearance means the env is gone (an
    executable, a module's directory, or the prefix).
    """

    name: str
    version: str
    origin: str
    source: str
    platform: str  # platform fingerprint it was detected/installed on
    location: str = ""
    prefix: str = ""
    interpreter: str = ""  # the python that imports it, for python packages
    exports: dict = field(default_factory=dict)
    packages: list = field(default_factory=list)  # [{name, version, sha256, url}] from pip's report
    recipe_uid: str = ""
    created: float = 0.0
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            self.id = env_id(self.name, self.version, self.origin, self.platform, self.interpreter)
        if not self.created:
            self.created = time.time()

    @property
    def path(self) -> Path:
        return envs_dir() / self.name / self.id

    def exists(self) -> bool:
        """False when what it points at has disappeared (prefix removed, executable uninstalled)."""
        for p in (self.prefix, self.location):
            if p and not os.path.exists(p):
                return False
        return True

    def to_dict(self) -> dict:
        return {"format": ENV_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> "SoftwareEnv":
        """The env an env.json describes; TypeError when it is not one (not an object, a
        field of the wrong type: the file may have been edited, or be hostile)."""
        if not isinstance(data, dict):
            raise TypeError(f"expected a JSON object, found {type(data).__name__}")
        known = {f for f in cls.__dataclass_fields__}
        fields = {k: v for k, v in data.items() if k in known}
        for name, types in _FIELD_TYPES.items():
            if name in fields and not isinstance(fields[name], types):
                raise TypeError(f"{name}: expected {types[0].__name__}, found {type(fields[name]).__name__}")
        return cls(**fields)


_TEXT = (str,)
_FIELD_TYPES = {
    "name": _TEXT, "version": _TEXT, "origin": _TEXT, "source": _TEXT, "platform": _TEXT, "location": _TEXT,
    "prefix": _TEXT, "interpreter": _TEXT, "recipe_uid": _TEXT, "id": _TEXT,
    "exports": (dict,), "packages": (list,), "created": (float, int),
}


def env_id(name: str, version: str, origin: str, platform: str, interpreter: str = "") -> str:
    """A stable directory name: version, origin and a short hash of platform + interpreter."""
    import hashlib

    h = hashlib.sha256(f"{platform}\0{interpreter}".encode()).hexdigest()[:10]
    return f"{version}-{origin}-{h}"


def envs_dir() -> Path:
    return cr_home() / "envs"


def register(env: SoftwareEnv) -> SoftwareEnv:
    """Write env.json (atomically, durably); replaces a previous record with the same id."""
    ensure_home()
    atomic_write_json(env.path / ENV_FILE, env.to_dict(), durable=True)
    return env


def list_envs(name: str | None = None, platform: str | None = None, prune: bool = True) -> list[SoftwareEnv]:
    """Registered envs (of one software, on one platform), newest version first.

    With prune, envs whose files have disappeared are reported and unregistered.
    """
    from ..store.refs import parse_version

    root = envs_dir()
    # Names starting with '.' are the installer's temp dirs and locks, never envs.
    names = [name] if name else sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    out = []
    for n in names:
        base = root / n
        if not base.is_dir():
            continue
        for env_file in sorted(base.glob(f"*/{ENV_FILE}")):
            try:
                env = SoftwareEnv.from_dict(load_file(env_file))
            except InvalidJSON as exc:  # not a regular file, too deep, NaN, bad syntax: cr.jsonio
                reason = exc.message[len(f"{env_file}: "):] if exc.message.startswith(f"{env_file}: ") else exc.message
                reporter().warning(f"skipped unreadable software env {env_file} ({reason})")
                continue
            except (ValueError, TypeError) as exc:
                reporter().warning(f"skipped unreadable software env {env_file} ({exc})")
                continue
            if platform and env.platform != platform:
                continue
            if not env.exists():
                if prune:
                    reporter().warning(f"software env {env.name} {env.version} ({env.origin}) is gone: {env.prefix or env.location} no longer exists; dropped it")
                    _remove_record(env_file.parent, env)
                continue
            out.append(env)

    def key(e: SoftwareEnv):
        try:
            return parse_version(e.version)
        except Exception:
            return parse_version("0")

    out.sort(key=key, reverse=True)  # newest first; the stable sort below keeps that per name
    out.sort(key=lambda e: e.name)
    return out


def _remove_record(env_dir: Path, env: SoftwareEnv) -> None:
    try:
        (env_dir / ENV_FILE).unlink()
    except FileNotFoundError:
        pass
    # An installed env's prefix lives inside its directory; a detected env's does not.
    shutil.rmtree(env_dir, ignore_errors=True)


def remove(env: SoftwareEnv) -> None:
    """Unregister an env; an installed env's prefix (inside CR_HOME) is deleted with it."""
    _remove_record(env.path, env)
