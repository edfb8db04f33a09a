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
    from ..archive.limits import human
    from ..run.packing import pack_run

    summary, results = pack_run(_solution_ref(ref), output=out_path, lock=lock_file, results=results,
                                stored_results=not no_results)
    path, size = summary["archive"], summary["size"]
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
    from ..archive.limits import human
    from ..run.packing import unpack_archive

    info = unpack_archive(file, into=into, force=force, max_entry_size=max_entry_size, max_total_size=max_total_size,
                          max_entries=max_entries, max_ratio=max_ratio, max_total_ratio=max_total_ratio)
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
