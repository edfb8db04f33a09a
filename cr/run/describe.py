"""`cr show` as a call: a component's meta, location, file checksums and, for a model whose
file comes from a registry package, the state of that pinned file."""
from __future__ import annotations


def describe(ref, verify: bool = True, prefer_repo: str | None = None) -> dict:
    """A component (`cr show REF --json`): {"ref", "uid", "repo", "path", "meta_path", "meta",
    ...}; with verify, "files" (each file's sha256 state: ok, missing, mismatch) and
    "verified"; a model also gets "payload": the state of its file from a registry package
    (None when it has none). prefer_repo: the copy in that repository (an unpacked
    archive's, to review it).

    NotFound (a CRError) when nothing matches, or prefer_repo holds no such component;
    RepoError when no repository is named prefer_repo."""
    from ..errors import NotFound
    from ..store.catalog import show as catalog_show
    from ..store.refs import parse_ref

    parsed = parse_ref(ref) if isinstance(ref, str) else ref
    info = catalog_show(parsed, verify=verify, prefer_repo=prefer_repo)
    if prefer_repo is not None and info["repo"] != prefer_repo:
        from ..store.registry import find_repo

        find_repo(prefer_repo)  # no repository of that name: say so (cr find --repo would fail the same way)
        raise NotFound(f"repository {prefer_repo!r} holds no {parsed}",
                       hint=f"cr find {parsed.kind} --repo {prefer_repo} lists what it holds")
    if parsed.kind == "model":
        from .pins import show_pin

        info["payload"] = show_pin(info, verify=verify)  # None: not from a registry package
    return info


def refuse_mismatched_payload(info: dict) -> None:
    """PinMismatch (with info on ``.result``) when a shown model's package file is not the pinned one."""
    payload = info.get("payload") or {}
    if payload.get("state") == "mismatch":
        from ..runtime.pins import PinMismatch, mismatch_hint

        error = PinMismatch(payload["message"], hint=mismatch_hint(payload, info["ref"]))
        error.result = info
        raise error


def show(ref, verify: bool = True, prefer_repo: str | None = None) -> dict:
    """A component as `cr show REF --json` prints it: describe(), then PinMismatch (a CRError,
    the data on ``.result``) when a model's file from a registry package is not the pinned
    one (the CLI prints the data first, then that error). See describe() for the keys."""
    info = describe(ref, verify=verify, prefer_repo=prefer_repo)
    refuse_mismatched_payload(info)
    return info
