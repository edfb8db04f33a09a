"""Options and parsers several command modules share."""
from __future__ import annotations

import json

import click


def key_values(pairs: tuple[str, ...], parse_json: bool = True) -> dict:
    """KEY=VALUE pairs (-O, -P, -E) as a dict; VALUE is JSON when it parses and parse_json
    (8, true, ["cuda","cpu"]), else the text. ValueError naming the first pair that is not
    KEY=VALUE (each option words it)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(pair)
        if parse_json:
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key.strip()] = value
    return out


def backend_options(pairs: tuple[str, ...]) -> dict:
    """-O KEY=VALUE pairs; VALUE is JSON when it parses, else a string."""
    try:
        return key_values(pairs)
    except ValueError as exc:
        raise click.BadParameter(f"{exc.args[0]!r} is not KEY=VALUE", param_hint="--option") from None


class BackendOption(click.Option):
    """An option whose help names the registered backends ({backends} in its help text).

    The names come from the cr.backends entry points, read only when the help is shown,
    so that commands do not pay for the entry-point scan at start-up.
    """

    def get_help_record(self, ctx):
        if self.help and "{backends}" in self.help:
            from ..runtime import registry

            try:
                names = registry.describe()
            except Exception:  # a malformed CR_BACKENDS must not break --help
                names = "see cr.backends entry points"
            self.help = self.help.replace("{backends}", names)
        return super().get_help_record(ctx)


def trust_option(f):
    """--trust: consent to what comes from repositories you have not trusted (docs/security.md)."""
    return click.option(
        "--trust", is_flag=True,
        help="Let what this needs from untrusted repositories (an archive's recipes, a pulled repo's "
             "net.py, ...) run: it is listed first, then the repositories are marked trusted.")(f)


def with_consent(call, trust: bool, as_json: bool = False):
    """call(trust); on a terminal, an Untrusted refusal lists exactly what would run and asks
    once whether to trust it (then call(True)). Elsewhere the refusal stands: --trust says yes."""
    import sys

    from ..store.trust import Untrusted

    try:
        return call(trust)
    except Untrusted as exc:
        if trust or as_json or not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise
        click.echo("This needs code from repositories you have not trusted; it would run:", err=True)
        for item in exc.items:
            click.echo(f"  {item.line()}", err=True)
        from ..textsafe import shown

        if not click.confirm(f"Trust {shown(', '.join(exc.repos))} and go on?", default=False, err=True):
            raise
        return call(True)
