"""cr publish: result records to a git repository (--git) or a cr dashboard serve server (--url)."""
from __future__ import annotations

import click

from . import output


@click.command("publish")
@click.option("--git", "git_url", metavar="URL", help="A git repository to publish to (results/ + the dashboard in site/).")
@click.option("--branch", default=None, help="With --git: the branch to push (default: the remote's default branch, "
                                            "its HEAD; main when it names none).")
@click.option("--message", metavar="TEXT", help="With --git: the commit's first line (the list of what was added follows).")
@click.option("--url", metavar="URL", help="A cr dashboard serve server to upload to.")
@click.option("--token-file", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --url: a file holding the server's upload token.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="With --url: seconds to wait for each answer.")
@click.option("--retries", type=click.IntRange(min=0), default=5, show_default=True,
              help="With --url: times a request is retried after a connection error or a 5xx answer (with backoff).")
@click.option("--results", "results", multiple=True, type=click.Path(exists=True), metavar="PATH",
              help="A result file or a folder of them (searched recursively); repeatable. Default: the local results store.")
@click.option("--json", "as_json", is_flag=True, help="Print what was published as JSON.")
def publish(git_url, branch, message, url, token_file, timeout, retries, results, as_json):
    """Publish results: cr publish --git URL, or cr publish --url URL --token-file FILE.

    Records already published are skipped; invalid ones are skipped with a warning naming
    them. git runs non-interactively: credentials must already be set up.
    """
    from ..errors import CRError

    if bool(git_url) == bool(url):
        raise click.UsageError("give exactly one of --git URL and --url URL")
    if git_url:
        if token_file:
            raise click.UsageError("--token-file goes with --url")
        from ..dashboard.publish import publish_git

        report = publish_git(git_url, branch=branch, sources=list(results), message=message)
        if as_json:
            output.emit_json(report.to_dict())
        elif report.commit is None:
            click.echo(f"nothing to publish: {git_url} ({report.branch}) already has all {report.duplicates} results")
        else:
            click.echo(f"published {report.added} result{'s' if report.added != 1 else ''} to {git_url} ({report.branch}) at {report.commit[:12]}"
                       f" ({report.duplicates} already there)")
            for key, n in report.by_label.items():
                click.echo(f"  {key}: {n}", err=True)
        return
    if not token_file:
        raise CRError("--url needs --token-file FILE", hint="the file holds the token the server was started with")
    if message:
        raise click.UsageError("--message goes with --git")
    if branch:
        raise click.UsageError("--branch goes with --git")
    from ..dashboard.upload import upload

    report = upload(url, token_file, sources=list(results), timeout=timeout, retries=retries)
    if as_json:
        output.emit_json(report.to_dict())
    else:
        click.echo(f"{len(report.uploaded)} uploaded, {len(report.skipped)} skipped (already there), "
                   f"{len(report.failed)} failed: {url}")
        for failure in report.failed:
            output.warn(f"result {failure['uid']} not uploaded: {failure['error']}")
    if report.failed:
        raise SystemExit(1)
