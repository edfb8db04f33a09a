"""Campaign executors: the contract every executor follows, and the entry-point group
``cr.executors`` that finds them by name.

The coordinator's Run (cr.campaign.coordinator) decides *what* runs and stores what comes
back; an executor decides *where and when* each job runs. A distribution registers one in
its pyproject.toml::

    [project.entry-points."cr.executors"]
    local = "cr.campaign.local:LocalExecutor"

and ``cr campaign run NAME --executor local`` (or run_campaign(NAME, executor="local"))
finds it. Names are listed without importing anything; the class is imported when it is
chosen and then checked like a pluggy hookspec, with an ExecutorError naming the entry
point and the distribution it comes from.

The contract (Executor below is a convenient base class; any class that keeps it works):

    name      optional; when set, the registered name
    summary   one line for `cr campaign run --help`
    OPTIONS   a tuple of Option: what the executor can be told (name, type, default, help).
              The host checks and converts what the user gives (`-E NAME=VALUE` on the CLI,
              options={...} in the library) and fills in the defaults, then calls
    __init__(**options)   every declared option as a keyword argument. Refuse what cannot
              work here (CRError with a hint), before any job runs.
    where()   optional; where the jobs go, in words ("this machine", "tcp://pi:8786")
    run(run)  run the jobs of the coordinator's Run. For each job of run.todo, in any order
              and concurrency:
                  run.not_run(job, "skipped" | "unplaceable", reason)   it will not run now
              or  run.started(job, worker_name)                         an attempt begins
                  run.finished(job, outcome, worker)                    it ended: outcome as
                      cr.campaign.jobs.run_here returns it (in memory, or in wire form:
                      cr.campaign.wire); worker {"name", "host", "platform", "gpu"} as known.
                      The records are stored and released there: hand each outcome over
                      as it arrives and keep no reference to it
              or  run.attempt_failed(job, worker_name, error)           the attempt ended
                      without an outcome (its machine left); started again or finished later
              Progress needs nothing more: every one of these calls journals the event and
              tells the listener (the CLI's progress line). A job's own failure is an
              outcome, never an exception; raise CRError only for what stops the whole run
              (a scheduler that does not answer). On Ctrl-C let KeyboardInterrupt through,
              after releasing what was submitted: the host then records the jobs cut short
              (run.interrupted()) and a rerun resumes; after run() returns the host closes
              the journal (run.close()).

What a worker machine does with a job (the archive, placement against its platform, GPU
slots, the job function) is executor-neutral: cr.campaign.worker, cr.campaign.placement
and cr.campaign.wire. Nothing here imports an executor's scheduler.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from ..errors import CRError

GROUP = "cr.executors"
DEFAULT = "local"
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_VALUE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_OPTION = re.compile(r"^[a-z][a-z0-9_]*$")
TYPES = (str, int, float, bool, object)  # object: any value, from the library only
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class ExecutorError(CRError):
    """An executor that is unknown, registered twice, breaks the contract, or is given an
    option it does not declare or a value of another type."""


@dataclass(frozen=True)
class Option:
    """One option an executor declares.

    name     a lowercase identifier: the keyword __init__ receives, and -E NAME=VALUE
    type     str, int, float, bool, or object (any value: settable from the library only)
    default  what __init__ receives when it is not given
    help     one line for the help text
    required True: the run is refused without it
    flag     the dedicated CLI flag cr has for it (--scheduler), if any: named in messages
    """

    name: str
    type: type = str
    default: object = None
    help: str = ""
    required: bool = False
    flag: str | None = None

    def how(self) -> str:
        """How a user gives it: '--scheduler ADDR (-E scheduler=...)'."""
        generic = f"-E {self.name}=..." if self.type is not object else f"options={{'{self.name}': ...}}"
        return f"{self.flag} or {generic}" if self.flag else generic

    def convert(self, value, executor: str):
        """value (a Python value, or text from the command line) as this option's type."""
        if self.type is object or value is None:
            return value
        if isinstance(value, str) and self.type is not str:
            text = value.strip().lower()
            try:
                if self.type is bool:
                    if text not in _TRUE + _FALSE:
                        raise ValueError(text)
                    return text in _TRUE
                return self.type(text)
            except ValueError:
                pass
        elif self.type is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        elif isinstance(value, self.type) and (self.type is bool or not isinstance(value, bool)):
            return value
        raise ExecutorError(f"executor {executor!r}: option {self.name} must be {_words(self.type)}, found {value!r}",
                            hint=f"give it as {self.how()}")


def _words(kind: type) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(kind, "any value")


class Executor:
    """A convenient base for executors: keeps the options it is given in self.options."""

    name: str = ""
    summary: str = ""
    OPTIONS: tuple[Option, ...] = ()

    def __init__(self, **options):
        self.options = options

    def where(self) -> str:
        return f"the {self.name or type(self).__name__} executor"

    def run(self, run) -> None:  # pragma: no cover - the contract
        raise NotImplementedError


@dataclass(frozen=True)
class ExecutorEntry:
    """One registered executor: its name, ``module:attr`` and who registered it."""

    name: str
    value: str
    origin: str  # "distribution reefkit 0.1.0"

    @property
    def where(self) -> str:
        return f"executor {self.name} = {self.value!r} of {self.origin} (entry-point group {GROUP})"


def entries() -> tuple[dict[str, ExecutorEntry], dict[str, list[ExecutorEntry]]]:
    """(name -> entry, name -> the conflicting entries of names registered twice); nothing imported."""
    from ..plugins import by_name, installed

    return by_name([ExecutorEntry(*found) for found in installed(GROUP)])


def available() -> list[str]:
    """The registered executors' names (none imported)."""
    return sorted(entries()[0])


def find(name: str) -> ExecutorEntry:
    """The entry registered under name; ExecutorError if unknown, malformed or registered twice."""
    chosen, conflicts = entries()
    if name in conflicts:
        raise ExecutorError(f"executor {name!r} is registered more than once: " + "; ".join(e.where for e in conflicts[name]),
                            hint=f"uninstall one of these distributions, or rename its entry point in the group {GROUP}")
    if name not in chosen:
        raise ExecutorError(f"unknown executor {name!r}",
                            hint=f"executors here: {', '.join(sorted(chosen)) or 'none'}; a distribution adds one under "
                                 f"the entry-point group {GROUP} (docs/campaigns.md)")
    entry = chosen[name]
    if not _NAME.match(name):
        raise ExecutorError(f"{entry.where}: the name is not valid",
                            hint="start with a lowercase letter; then lowercase letters, digits, '-' and '_'")
    if not _VALUE.match(entry.value):
        raise ExecutorError(f"{entry.where} does not name module:attr", hint="an entry point value looks like my_pkg.executor:MyExecutor")
    return entry


def load(name: str) -> type:
    """The executor class registered under name, imported and checked against the contract."""
    entry = find(name)
    from ..plugins import LoadError, load_attr

    try:
        obj = load_attr(entry.value)
    except LoadError as exc:
        if exc.stage == "import":
            raise ExecutorError(f"{entry.where} cannot be imported: {exc}",
                                hint="fix or reinstall that distribution, or choose another --executor") from exc
        raise ExecutorError(f"{entry.where}: {exc}", hint="fix the entry point's value") from None
    check_class(obj, entry)
    return obj


def check_class(cls: object, entry: ExecutorEntry) -> None:
    """ExecutorError naming the entry point when cls breaks the executor contract."""
    fix = "see the contract in cr/campaign/executors.py (docs/campaigns.md: adding an executor)"
    if not isinstance(cls, type):
        raise ExecutorError(f"{entry.where} is a {type(cls).__name__}, not a class", hint=fix)
    declared = getattr(cls, "name", None)
    if declared and declared != entry.name:
        raise ExecutorError(f"{entry.where}: class {cls.__name__} declares name {declared!r}",
                            hint="make the entry point's name and the class's name attribute agree")
    if not callable(getattr(cls, "run", None)) or not _accepts(cls.run, None, None):
        raise ExecutorError(f"{entry.where}: class {cls.__name__} has no method run(self, run)", hint=fix)
    options = getattr(cls, "OPTIONS", ())
    if not isinstance(options, (tuple, list)) or not all(isinstance(o, Option) for o in options):
        raise ExecutorError(f"{entry.where}: class {cls.__name__} declares OPTIONS = {options!r:.80}",
                            hint="OPTIONS is a tuple of cr.campaign.executors.Option")
    names = [o.name for o in options]
    for o in options:
        if not _OPTION.match(o.name) or names.count(o.name) > 1 or o.type not in TYPES:
            raise ExecutorError(f"{entry.where}: class {cls.__name__} declares option {o.name!r} of type {o.type!r}",
                                hint="option names are unique lowercase identifiers; types: str, int, float, bool, object")
    if not _accepts(cls, **{n: None for n in names}):
        raise ExecutorError(f"{entry.where}: {cls.__name__}{_signature(cls)} cannot be called with its options "
                            f"({', '.join(names) or 'none'}) as keyword arguments", hint=fix)


def _accepts(func, *args, **kwargs) -> bool:
    try:
        inspect.signature(func).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:  # a builtin: nothing to check
        return True
    return True


def _signature(cls: type) -> str:
    try:
        return str(inspect.signature(cls))
    except (TypeError, ValueError):
        return "(...)"


def options_of(cls: type) -> dict[str, Option]:
    return {o.name: o for o in getattr(cls, "OPTIONS", ())}


def make(name: str, options: dict | None = None):
    """An instance of the executor registered under name, given options (checked and
    converted against its OPTIONS, defaults filled in). ExecutorError for an option it does
    not declare, a value of another type, or a required one missing."""
    cls = load(name)
    declared = options_of(cls)
    given = dict(options or {})
    unknown = sorted(k for k in given if k not in declared)
    if unknown:
        raise ExecutorError(f"executor {name!r} has no option {', '.join(unknown)}",
                            hint=f"its options: {', '.join(o.how() for o in declared.values()) or 'none'}")
    values = {}
    for opt in declared.values():
        value = opt.convert(given[opt.name], name) if opt.name in given else opt.default
        if value is None and opt.required:
            raise ExecutorError(f"executor {name!r} needs its option {opt.name}: give it as {opt.how()}",
                                hint=f"{opt.name}: {opt.help or _words(opt.type)}")
        values[opt.name] = value
    return cls(**values)


def describe() -> list[tuple[str, str, list[str] | None]]:
    """(name, summary, its options' names) of every registered executor, for help texts; a
    broken one has what is wrong as its summary and None as options, never an exception."""
    out = []
    for name in available():
        try:
            cls = load(name)
        except CRError as exc:
            out.append((name, f"cannot be used: {exc.message}", None))
            continue
        names = [o.name for o in options_of(cls).values() if o.type is not object]
        out.append((name, getattr(cls, "summary", "") or "", names))
    return out
