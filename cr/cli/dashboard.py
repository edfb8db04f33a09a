"""cr dashboard build / open / serve: the results dashboard (cr/dashboard)."""
from __future__ import annotations

import click

from . import output


def _default(sub: str):
    from ..paths import cr_home

    return cr_home() / sub


@click.group("dashboard")
def dashboard() -> None:
    """Build and open the static results dashboard (leaderboard, Pareto plot, details).

    The site is plain files: it works from file:// and offline, and can be copied to any
    static web host.
    """


@dashboard.command("build")
@click.option("--results", "results", multiple=True, type=click.Path(exists=True), metavar="PATH",
              help="A directory of result JSON files (searched recursively) or one record; repeatable. "
                   "Default: CR_HOME/results.")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR", help="Where to write the site (default: CR_HOME/dashboard).")
@click.option("--from-git", "from_git", metavar="URL", help="Build from the results of a git results repository (made by cr publish --git).")
@click.option("--branch", default="main", show_default=True, help="--from-git: the branch to read.")
@click.option("--full", is_flag=True, help="Re-read every record, ignoring what the last build of --out kept.")
@click.option("--json", "as_json", is_flag=True, help="Print what was built as JSON.")
def build_(results, out, from_git, branch, full, as_json):
    """Build the dashboard from result records: cr dashboard build --results DIR --out DIR.

    Files that are not result records are skipped with a warning naming them. A rebuild
    reads only the records that changed since the last build into the same --out.
    """
    from ..dashboard import build
    from ..errors import CRError

    sources = list(results)
    if from_git:
        from ..dashboard.publish import fetch_results

        sources.append(fetch_results(from_git, branch))
    if not sources:
        default = _default("results")
        if not default.is_dir():
            raise CRError(f"there are no results in {default} yet",
                          hint="store a result first: cr validate model lenet-digits --backend onnxruntime (every "
                               "benchmark, validate and run stores its own), or give a folder of result files with --results DIR")
        sources = [default]
    info = build(sources, out or _default("dashboard"), incremental=not full)
    if as_json:
        output.emit_json(info.to_dict())
        return
    click.echo(f"dashboard: {info.index_html}")
    click.echo(f"{info.results:,} results in {info.rows:,} leaderboard rows"
               f" ({info.processed:,} files read, {info.reused:,} unchanged, {info.skipped:,} skipped) in {info.seconds:.2f} s",
               err=True)
    click.echo("open it with: cr dashboard open" + (f" --out {out}" if out else ""), err=True)


@dashboard.command("open")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR", help="The site's directory (default: CR_HOME/dashboard).")
@click.option("--no-browser", is_flag=True, help="Only print the file:// URL.")
def open_(out, no_browser):
    """Open the built dashboard in a web browser and print its file:// URL."""
    import os
    import sys
    from pathlib import Path

    from ..errors import CRError

    index = Path(out or _default("dashboard")).expanduser().absolute() / "index.html"
    if not index.is_file():
        raise CRError(f"there is no dashboard at {index.parent}", hint="build it first: cr dashboard build" + (f" --out {out}" if out else ""))
    url = index.as_uri()
    click.echo(url)
    if no_browser:
        return
    # Without a display, webbrowser would start a text-mode browser (lynx, w3m) in this
    # terminal; a server or CI job wants the URL only.
    headless = sys.platform.startswith("linux") and not any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"))
    if headless:
        click.echo("no graphical display here: open the URL above in a browser", err=True)
        return
    import webbrowser

    if not webbrowser.open(url):
        output.warn("no web browser could be started: open the URL above yourself")


@dashboard.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one, printed).")
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True), metavar="FILE",
              help="A file holding the upload token (one line). Without it, uploads are refused.")
@click.option("--results", type=click.Path(file_okay=False), metavar="DIR",
              help="The results store uploads go into and the site is built from (default: CR_HOME/results).")
@click.option("--site", type=click.Path(file_okay=False), metavar="DIR", help="Where the site is built (default: CR_HOME/dashboard).")
@click.option("--max-bytes", type=click.IntRange(min=1024), default=64 * 1024 * 1024, show_default=True,
              help="Largest upload accepted, in bytes.")
@click.option("--max-uploads", type=click.IntRange(min=1), default=4, show_default=True,
              help="Uploads read and stored at once (their sizes together at most --max-bytes); others wait, then get 503.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Seconds a request's headers, a pause in its body, or an idle connection may take.")
@click.option("--quiet-log", is_flag=True, help="Do not log requests.")
def serve(host, port, token_file, results, site, max_bytes, max_uploads, timeout_s, quiet_log):
    """Serve the dashboard over HTTP and accept authenticated result uploads.

    POST /api/results with Authorization: Bearer TOKEN stores records (one, or a JSON list)
    in --results and rebuilds the site; cr publish --url uploads this way. Uploads are
    bounded in number, bytes and time (--max-uploads, --max-bytes, --timeout). Standard
    library http.server: put it behind a TLS reverse proxy on a public network.
    """
    from ..dashboard.server import make_server, return_freed_buffers

    return_freed_buffers()  # this process only serves: its memory follows what uploads hold
    server = make_server(host, port, site=site or _default("dashboard"), results=results or _default("results"),
                         token_file=token_file, max_bytes=max_bytes, quiet=quiet_log, max_uploads=max_uploads,
                         timeout_s=timeout_s)
    bound_host, bound_port = server.server_address[:2]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    click.echo(f"serving {server.site} on http://{shown}:{bound_port}/ (uploads "
               + ("on" if server.token is not None else "off: no --token-file") + "); Ctrl-C stops", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
