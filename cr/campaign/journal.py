"""The campaign's journal: an append-only JSON-lines file of what happened to each job.

    CR_HOME/campaigns/<name>-<uid>/journal.jsonl

Each line is one event: {"job", "event": "started" | "done" | "failed" | "unplaceable" |
"skipped", "attempt", "worker", "time", ...}; "done" carries the uids of the stored
results. Appending one line per event keeps a campaign of thousands of jobs cheap and
survives a killed coordinator (a torn last line is ignored). The state of a job is the
fold of its events (state()); a job is finished when it has a "done" event whose results
are still in the results store, which is what makes a rerun skip it.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..paths import ensure_home

FINAL = ("done", "failed", "unplaceable", "skipped")


def folder(name: str, uid: str) -> Path:
    return ensure_home() / "campaigns" / f"{name}-{uid}"


class Journal:
    def __init__(self, name: str, uid: str):
        self.path = folder(name, uid) / "journal.jsonl"
        self._file = None

    def events(self) -> Iterator[dict]:
        """The events, oldest first, read as they are iterated: a journal that reruns made
        long is folded (state()) without holding every line."""
        if not self.path.is_file():
            return
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:  # a line torn by a kill: the event did not happen
                    continue
                if isinstance(event, dict) and isinstance(event.get("job"), str):
                    yield event

    def append(self, job: str, event: str, sync: bool = True, **fields) -> dict:
        """Append one event; a "done" or "storing" one is on disk when this returns (sync=False: at sync())."""
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        entry = {"job": job, "event": event, "time": round(time.time(), 3), **fields}
        self._file.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()
        if event in ("done", "storing") and sync:
            # a stored result must never run again after a crash, nor be stored twice
            os.fsync(self._file.fileno())
        return entry

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def state(events: Iterable[dict]) -> dict[str, dict]:
    """job id -> {"state", "attempts", "worker", "results", "error", "reason"} from the events."""
    jobs: dict[str, dict] = {}
    for e in events:
        s = jobs.setdefault(e["job"], {"state": "pending", "attempts": 0, "worker": None, "results": [], "error": None,
                                      "reason": None, "history": []})
        kind = e.get("event")
        if kind == "started":
            s["attempts"] = max(s["attempts"], int(e.get("attempt") or 0))
            s["state"], s["worker"] = "running", e.get("worker")
        elif kind == "attempt-failed":
            s["history"].append({"attempt": e.get("attempt"), "worker": e.get("worker"), "error": e.get("error")})
            s["state"] = "retrying"
        elif kind == "storing":  # written (and synced) before the job's records go into the store
            s["storing"] = {"attempt": e.get("attempt"), "results": list(e.get("results") or [])}
        elif kind == "done":
            s.update(state="done", worker=e.get("worker"), results=list(e.get("results") or []), error=None, reason=None)
            s.pop("storing", None)
        elif kind in ("failed", "unplaceable", "skipped"):
            s.update(state=kind, error=e.get("error"), reason=e.get("reason"), worker=e.get("worker") or s["worker"],
                     results=list(e.get("results") or []))  # a failed job's records (a FAIL validation) are stored too
            s.pop("storing", None)
        elif kind == "interrupted":
            if s["state"] == "running":
                s["state"] = "pending"
    return jobs


def stored(uids: list[str], store) -> bool:
    """True when every result uid is in the store (a removed result makes the job run again)."""
    from ..errors import CRError

    if not uids:
        return False
    for uid in uids:
        try:
            store.get(uid)
        except CRError:
            return False
    return True
