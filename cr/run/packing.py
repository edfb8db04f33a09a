"""`cr pack` / `cr unpack` as calls: which reference results and lock go into the archive, and
the summaries their --json prints (cr.archive does the packing and the verified unpacking)."""
from __future__ import annotations

from ..errors import CRError


def lock_of_results(paths: list) -> dict | None:
    """The lock the result records at paths ran with (record["lock"]), to pack with them.

    None when none of them names one; CRError when they ran with different software (the
    archive holds one lock: give it with --lock, or pack results of one lock)."""
    from ..jsonio import loads, read_file
    from ..textsafe import shown

    locks = []
    for path in paths:
        try:
            record = loads(read_file(path, where=f"result file {path}"), f"result file {path}", parse_constant=float)
        except (CRError, OSError):
            continue  # pack names what is wrong with the file
        if isinstance(record, dict) and isinstance(record.get("lock"), dict):
            locks.append((path, record["lock"]))
    if not locks:
        return None

    def software(lock: dict) -> dict:
        return {s.get("name"): s.get("version") for s in lock.get("software") or [] if isinstance(s, dict)}

    first_path, first = locks[0]
    for path, other in locks[1:]:
        if (other.get("root"), software(other)) != (first.get("root"), software(first)):
            a, b = software(first), software(other)
            diff = ", ".join(f"{n} {a.get(n) or 'absent'} vs {b.get(n) or 'absent'}" for n in sorted(set(a) | set(b), key=str)
                             if a.get(n) != b.get(n)) or f"roots {first.get('root')} vs {other.get('root')}"
            raise CRError(f"the results ran with different locks: {first_path} and {path} ({shown(diff)})",
                          hint="an archive carries one lock: pack results of one lock, or name the lock with --lock FILE")
    return first


def pack_run(solution_ref: str, output=None, lock=None, results=None, stored_results: bool = True) -> tuple[dict, list]:
    """(pack_solution's summary, the reference result files packed)."""
    from ..archive import pack, read_manifest
    from ..fsutil import sha256_file

    results = [str(r) for r in results or []]
    if results:
        lock = lock or lock_of_results(results)  # the lock the given results ran with
    elif stored_results:
        from .solution import stored_references

        results, stored_lock = stored_references(solution_ref)
        lock = lock or stored_lock
    path = pack(solution_ref, output=output, lock=lock, results=results or None)
    manifest = read_manifest(path)
    summary = {
        "archive": str(path),
        "sha256": sha256_file(path),
        "size": path.stat().st_size,
        "solution": manifest["solution"]["ref"],
        "components": [c["ref"] for c in manifest["components"]],
        "excluded": manifest["excluded"],
        "lock": manifest["lock"],
        "results": manifest["results"],
        "files": len(manifest["files"]),
        "bytes": sum(f["size"] for f in manifest["files"]),
    }
    return summary, results


def pack_solution(solution_ref: str, output=None, lock=None, results=None, stored_results: bool = True) -> dict:
    """Pack a solution and everything it needs into NAME-VERSION.cr.zip (`cr pack solution NAME
    --json`): {"archive", "sha256", "size", "solution", "components", "excluded", "lock",
    "results", "files", "bytes"}. output: the file, or a folder for NAME-VERSION.cr.zip.

    results: reference result files to include (their lock goes in unless lock names one);
    without them, the newest successful result of each declared configuration on this
    machine (stored_results=False: none, as --no-results). cr.pack is the lower-level call
    (it returns the archive's path)."""
    return pack_run(solution_ref, output=output, lock=lock, results=results, stored_results=stored_results)[0]


def unpack_archive(path, into=None, force: bool = False, max_entry_size=None, max_total_size=None,
                   max_entries: int | None = None, max_ratio: float | None = None,
                   max_total_ratio: float | None = None) -> dict:
    """Verify a NAME-VERSION.cr.zip completely, unpack it and register it as a repository
    (`cr unpack FILE --json`): cr.unpack's info, each excluded entry with the state of its
    pinned payload here ("pin_here"). into: the folder (default CR_HOME/archives/NAME-VERSION);
    the limits as the CLI's options ("2GiB" sizes, counts, ratios)."""
    from ..archive import unpack
    from ..archive.limits import DEFAULT, parse_size
    from .pins import archive_pins

    limits = DEFAULT.with_(
        max_entry_bytes=parse_size(max_entry_size) if max_entry_size else None,
        max_total_bytes=parse_size(max_total_size) if max_total_size else None,
        max_entries=max_entries,
        max_ratio=max_ratio,
        max_total_ratio=max_total_ratio,
    )
    info = unpack(path, target_repo_dir=into, limits=limits, force=force)
    archive_pins(info)  # each pinned payload checked against what is installed here
    return info
