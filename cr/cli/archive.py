"""cr pack / cr unpack: solution archives (NAME-VERSION.cr.zip)."""
from __future__ import annotations

import click

from . import output


def _solution_ref(words: tuple[str, ...]) -> str:
    from ..store.refs import parse_ref_words

    words = list(words)
    if len(words) == 1 and ":" not in words[0]:
        words = ["solution", words[0]]
    ref = parse_ref_words(words)
    if ref.kind != "solution":
        raise click.UsageError(f"cr pack packs solutions, not {ref.kind}: cr pack solution NAME")
    return str(ref)


def _print_excluded(excluded: list[dict], heading: str) -> None:
    if not excluded:
        return
    click.echo(heading)
    for e in excluded:
        how = e.get("install") or (f"see {e['homepage']}" if e.get("homepage") else "obtain them from their owner")
        click.echo(f"  {e['ref']}: {e['reason']} -> {how}")
        if e.get("sha256"):
            click.echo(f"    pinned sha256 {e['sha256'][:12]}... of {e.get('path')} in {e.get('package')} {e.get('package_version') or ''}".rstrip())
        state = e.get("pin_here")
        if state and state.get("state") == "mismatch":
            output.warn(f"{state['message']}: loading it will fail")
        elif state and state.get("state"):
            click.echo(f"    here: {state['state']}" + (f" ({state['installed_version']})" if state.get("installed_version") else ""))


def _reference_lines(paths: list) -> list[str]:
    """'UID  benchmark single-stream threads=2 batch=1' per reference result packed."""
    from ..errors import CRError
    from ..jsonio import loads, read_file
    from ..results.summary import config_label

    lines = []
    for path in paths:
        try:
            record = loads(read_file(path, where=str(path)), str(path), parse_constant=float)
        except (CRError, OSError):
            continue
        if isinstance(record, dict):
            lines.append(f"{record.get('uid')}  {record.get('action')} {config_label(record)}")
    return lines


def _lock_of_results(paths: list[str]) -> dict | None:
    """The lock the result records at paths ran with (record["lock"]), to pack with them.

    None when none of them names one; CRError when they ran with different software (the
    archive holds one lock: give it with --lock, or pack results of one lock)."""
    from ..errors import CRError
    from ..jsonio import loads, read_file

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
            raise CRError(f"the results ran with different locks: {first_path} and {path} ({output.clean(diff)})",
                          hint="an archive carries one lock: pack results of one lock, or name the lock with --lock FILE")
    return first


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("-o", "--output", "out_path", type=click.Path(), help="Archive file, or a directory for NAME-VERSION.cr.zip (default: here).")
@click.option("--lock", "lock_file", type=click.Path(dir_okay=False), help="The lock the solution was benchmarked with (cr resolve ... -o FILE).")
@click.option("--result", "results", multiple=True, type=click.Path(dir_okay=False), help="A reference result record (JSON) to include; repeatable.")
@click.option("--no-results", is_flag=True, help="Leave out the reference results from the results store.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def pack(ref, out_path, lock_file, results, no_results, as_json):
    """Pack a solution and everything it needs into NAME-VERSION.cr.zip: cr pack solution NAME.

    Without --result, the newest successful result of each configuration of each
    declared action on this machine (cr results list --solution NAME) goes in as the
    reference, with the lock it ran in; cr reproduce compares each with the run of the
    same configuration. With --result, the lock those results ran with goes in (unless
    --lock names one).
    """
    from ..archive import pack as run_pack, read_manifest
    from ..archive.limits import human
    from ..fsutil import sha256_file

    solution_ref = _solution_ref(ref)
    lock = lock_file
    results = list(results)
    if results:
        lock = lock or _lock_of_results(results)  # the lock the given results ran with
    elif not no_results:
        from ..run.solution import stored_references

        results, stored_lock = stored_references(solution_ref)
        lock = lock or stored_lock
    path = run_pack(solution_ref, output=out_path, lock=lock, results=results or None)
    manifest = read_manifest(path)
    size = path.stat().st_size
    summary = {
        "archive": str(path),
        "sha256": sha256_file(path),
        "size": size,
        "solution": manifest["solution"]["ref"],
        "components": [c["ref"] for c in manifest["components"]],
        "excluded": manifest["excluded"],
        "lock": manifest["lock"],
        "results": manifest["results"],
        "files": len(manifest["files"]),
        "bytes": sum(f["size"] for f in manifest["files"]),
    }
    if as_json:
        output.emit_json(summary)
        return
    click.echo(f"packed {summary['solution']} -> {path}")
    click.echo(f"  {len(summary['components'])} components, {summary['files']} files, {human(summary['bytes'])} "
               f"({human(size)} compressed), sha256 {summary['sha256']}")
    if summary["lock"]:
        click.echo("  with its lock")
    elif summary["results"]:
        click.echo("  without a lock (the results name none): give it with --lock FILE")
    if summary["results"]:
        click.echo(f"  with {len(summary['results'])} reference result(s):")
        for line in _reference_lines(results):
            click.echo(f"    {output.clean(line)}")
    _print_excluded(summary["excluded"], "left out (the archive carries what installs them):")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--into", "into", type=click.Path(file_okay=False), help="Directory to unpack into (default: CR_HOME/archives/NAME-VERSION).")
@click.option("--force", is_flag=True, help="Replace another archive of the same solution name and version.")
@click.option("--max-entry-size", metavar="SIZE", help="Largest file allowed (default 2GiB).")
@click.option("--max-total-size", metavar="SIZE", help="Largest unpacked total allowed (default 8GiB).")
@click.option("--max-entries", type=int, metavar="N", help="Most files allowed (default 100000).")
@click.option("--max-ratio", type=float, metavar="R", help="Highest compression ratio allowed for files of 1 MiB or more (default 200).")
@click.option("--max-total-ratio", type=float, metavar="R", help="Highest compression ratio allowed for the whole archive, once it unpacks to 1 MiB or more (default 200).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def unpack(file, into, force, max_entry_size, max_total_size, max_entries, max_ratio, max_total_ratio, as_json):
    """Verify FILE (a NAME-VERSION.cr.zip) completely, unpack it and register it as a repository."""
    from ..archive import unpack as run_unpack
    from ..archive.limits import DEFAULT, human, parse_size

    limits = DEFAULT.with_(
        max_entry_bytes=parse_size(max_entry_size) if max_entry_size else None,
        max_total_bytes=parse_size(max_total_size) if max_total_size else None,
        max_entries=max_entries,
        max_ratio=max_ratio,
        max_total_ratio=max_total_ratio,
    )
    info = run_unpack(file, target_repo_dir=into, limits=limits, force=force)
    from ..run.pins import archive_pins

    archive_pins(info)  # each pinned payload checked against what is installed here
    if as_json:
        output.emit_json(info)
        return
    if info["reused"]:
        click.echo(f"{info['solution']} is already unpacked in {info['target']} (the same archive): nothing to do")
    else:
        verb = "replaced" if info["replaced"] else "unpacked"
        click.echo(f"{verb} {info['solution']} into {info['target']}")
        click.echo(f"  repository {info['repo']}, {info['files']} files, {human(info['bytes'])}, every sha256 verified")
    for gone in info["unregistered"]:
        click.echo(f"  unregistered repository {gone['name']} ({gone['path']})")
    click.echo("components:")
    for ref in info["components"]:
        click.echo(f"  {ref}")
    _print_excluded(info["excluded"], "left out of the archive; get them with:")
    if info["lock"]:
        click.echo(f"lock: {info['lock']}")
    for path in info["results"]:
        click.echo(f"result: {path}")
    click.echo(f"next: cr install {info['solution']}   (the software it needs), then cr benchmark {info['solution']}")
