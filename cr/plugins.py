"""What every plugin registry shares (backends: cr.runtime.registry; campaign executors:
cr.campaign.executors): the entry points of a group with the distribution that declares
each, and choosing one entry per name while keeping the names registered twice apart.
Nothing is imported here; each registry checks the class it loads in its own terms."""
from __future__ import annotations

from typing import Callable, TypeVar

E = TypeVar("E")


def installed(group: str) -> list[tuple[str, str, str]]:
    """(name, "module:attr", "distribution NAME VERSION") of each entry point of group."""
    from importlib import metadata

    every = metadata.entry_points()
    # Python 3.9 answers a dict of groups; later versions, something to select() from
    eps = every.select(group=group) if hasattr(every, "select") else every.get(group, [])
    found = []
    for ep in eps:
        dist = getattr(ep, "dist", None)
        origin = f"distribution {dist.metadata['Name']} {dist.version}" if dist is not None else "an unknown distribution"
        found.append((ep.name, ep.value, origin))
    return found


def by_name(entries: list[E], name: Callable[[E], str] = lambda e: e.name) -> tuple[dict[str, E], dict[str, list[E]]]:
    """(name -> the first entry, name -> every entry of a name registered more than once with a
    different target or origin): a plugin named twice is refused by name, never one picked."""
    chosen: dict[str, E] = {}
    conflicts: dict[str, list[E]] = {}
    for entry in entries:
        key, old = name(entry), chosen.get(name(entry))
        if old is None:
            chosen[key] = entry
        elif old != entry:
            conflicts.setdefault(key, [old]).append(entry)
    return chosen, conflicts


class LoadError(Exception):
    """A plugin's "module:attr" that cannot be loaded. stage: "import" (the module raised: the
    message is its exception's type and text) or "attribute" (the module lacks the name)."""

    def __init__(self, stage: str, message: str):
        super().__init__(message)
        self.stage = stage


def load_attr(value: str) -> object:
    """The object a "module:attr[.attr...]" value names, imported now; LoadError otherwise.
    Each registry words the failure in its own terms (which plugin, what to fix)."""
    import importlib

    module_name, _, attr = value.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:  # a broken plugin is a user-fixable problem: the registry reports it
        raise LoadError("import", f"{type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LoadError("attribute", f"module {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj
