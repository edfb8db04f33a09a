"""`cr env list|show|rm` as calls on the registered software envs (CR_HOME/envs/)."""
from __future__ import annotations

from ..errors import CRError, NotFound


def env_list(name: str | None = None) -> list:
    """The registered software envs (of one software name), newest version first
    (`cr env list [NAME] --json`: each SoftwareEnv's to_dict())."""
    from .envs import list_envs

    return list_envs(name)


def env_show(name: str, which: str | None = None):
    """One registered software env (`cr env show NAME [VERSION|ID] --json`: its to_dict()):
    the newest of name, or the one whose version or id is which. NotFound when none is
    registered; CRError when a version names several (give the id)."""
    from .envs import list_envs

    envs = list_envs(name)
    if which:
        envs = [e for e in envs if which in (e.id, e.version)]
    if not envs:
        what = f"{name} {which}" if which else name
        raise NotFound(f"no software env {what}", hint="cr env list shows the registered envs")
    if which and len({e.id for e in envs}) > 1:
        raise CRError(f"{len(envs)} software envs of {name} have version {which}: {', '.join(e.id for e in envs)}",
                      hint=f"name one by its ID: cr env ... {name} ID")
    return envs[0]


def env_rm(name: str, which: str):
    """Unregister the software env name at version or id which (`cr env rm NAME VERSION|ID`);
    an installed env's prefix is deleted with it. Returns the env removed."""
    from .envs import remove

    env = env_show(name, which)
    remove(env)
    return env
