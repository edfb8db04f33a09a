"""cr do: the generic door to any action (shipped or a user's), through run_action."""
from __future__ import annotations

import click

from . import output
from .actionopts import conclude, kept, one, show, status, target_options
from .options import backend_options

# the keys every record has (cr.results.record): the table shows the others, what the action returned
_COMMON = {"format", "uid", "action", "status", "started", "ended", "cr_version", "components", "backend", "lock",
           "platform", "config", "inputs", "model_file", "pipeline", "raw", "error", "runtime", "machine"}


def params_of(pairs: tuple[str, ...]) -> dict:
    """-P KEY=VALUE's: a value is JSON when it parses (3, 0.5, true, null, [1,2], {"a":1}), else the text."""
    from ..errors import CRError
    from .options import key_values

    try:
        return key_values(pairs)
    except ValueError as exc:
        raise CRError(f"-P {exc.args[0]!r} is not KEY=VALUE",
                      hint="e.g. -P limit=16 -P scenario=offline (see cr show action:NAME)") from None


def result_rows(record: dict) -> list[list]:
    """FIELD/VALUE rows of what the action returned (the record's keys beyond the common ones)."""
    import json

    rows = [["action", record["action"]], ["uid", record["uid"]], ["status", record["status"]]]
    for key, value in record.items():
        if key not in _COMMON and key not in ("metrics",) or (key == "metrics" and value):
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            rows.append([key, text if len(text) <= 120 else text[:117] + "..."])
    return rows


@click.command("do")
@click.argument("action")
@click.argument("ref", nargs=-1, required=True)
@target_options
@click.option("-P", "--param", "param_pairs", multiple=True, metavar="KEY=VALUE",
              help="An action parameter (repeatable; the value is JSON when it parses), e.g. -P limit=16.")
def do(action, ref, backend, variant, dataset, split, options, lock_file, out, as_json, store, install, param_pairs):
    """Run any action: cr do ACTION KIND NAME (or cr do ACTION KIND:NAME[@SPEC]).

    The generic door for every action, shipped or your own (an actions component in a
    registered repository, docs/actions.md): its parameters are -P KEY=VALUE (cr show
    action:ACTION lists them), the rest as for cr benchmark. The result is stored like
    any other (cr results show UID). The actions there are: cr find action.
    """
    from ..errors import CRError
    from ..run.actions import run_action
    from ..run.hooks import actions_for
    from ..store.refs import parse_ref_words

    parsed = parse_ref_words(ref)
    offered = actions_for(parsed.kind)
    if action not in offered:
        raise CRError(f"no action {action!r} applies to a {parsed.kind}",
                      hint=f"actions for a {parsed.kind}: {', '.join(offered) or 'none'} (an action's meta lists the kinds in applies_to)")
    record, not_stored = kept(lambda: run_action(action, str(parsed), backend=backend, params=params_of(param_pairs),
                                                 backend_options=backend_options(options), variant=variant, dataset=dataset,
                                                 split=split, lock=lock_file, output=out, store=store, install=install))
    record = one(record)
    title = f"{action} of {record['components'][0]['ref']}" + (f" on {record['backend']['name']}" if record.get("backend") else "")
    show(record, out, as_json, lambda: output.table(["FIELD", "VALUE"], result_rows(record), title=title))
    conclude(not_stored, lambda: status(record))
