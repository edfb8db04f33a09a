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


@click.command()
@click.argument("ref", nargs=-1, required=True)
@click.option("-o", "--output", "out_path", type=click.Path(), help="Archive file, or a directory for NAME-VERSION.cr.zip (default: here).")
@click.option("--lock", "lock_file", type=click.Path(dir_okay=False), help="The lock the solution was benchmarked with (cr resolve ... -o FILE).")
@click.option("--result", "results", multiple=True, type=click.Path(dir_okay=False), help="A reference result record (JSON) to include; repeatable.")
@click.option("--no-results", is_flag=True, help="Leave out the reference results from the results store.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def pack(ref, out_path, lock_file, results, no_results, as_json):
    """Pack a solution and everything it needs into NAME-VERSION.cr.zip: cr pack solution NAME.

    Without --result, the newest successful result of each declared action on this
    machine (cr results list --solution NAME) goes in as the reference, with the lock it
    ran in; cr reproduce compares against them.
    """
    from ..archive import pack as run_pack, read_manifest
    from ..archive.limits import human
    from ..fsutil import sha256_file

    solution_ref = _solution_ref(ref)
    lock = lock_file
    results = list(results)
    if not results and not no_results:
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
    if summary["results"]:
        click.echo(f"  with {len(summary['results'])} reference result(s)")
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
