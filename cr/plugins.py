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
