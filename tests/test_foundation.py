"""The foundation's shared helpers, on real processes, files and SQLite databases:

- cr.procs.run_bounded / stop_group: output capped, time bounded, the whole process group
  gone afterwards (grandchildren included, also those that ignore SIGTERM);
- cr.fsutil.atomic_file: a streamed write is all or nothing, whatever happens to the writer;
- cr.sqlcache: a damaged cache is deleted and rebuilt, one of another version re-created.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import threading
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from cr import procs, sqlcache
from cr.errors import StoreError
from cr.events import CollectingReporter, set_reporter
from cr.fsutil import atomic_file, atomic_write_bytes

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")


def _running(pid: int) -> bool:
    """Whether pid is a live process (a zombie nobody reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in (b"Z", b"X")


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _wait_for_file(path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while not (path.is_file() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.02)
    return path.read_text().strip()


# A child that starts a grandchild (which ignores SIGTERM when asked), writes the
# grandchild's pid to a file, then hangs without printing.
HANGING_PARENT = textwrap.dedent("""
    import signal, subprocess, sys, time
    ignore = sys.argv[2] == "ignore-term"
    code = "import signal, time\\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n" if ignore else "") + "time.sleep(300)"
    grandchild = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(0.3 if ignore else 0)  # its SIGTERM handler is in place
    with open(sys.argv[1], "w") as f:
        f.write(f"{grandchild.pid}\\n")
    time.sleep(300)
""")


# -- the bounded runner ----------------------------------------------------------------------------

def test_a_command_that_prints_megabytes_is_stopped_at_the_limit():
    started = time.monotonic()
    code, out = procs.run_bounded([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('y' * 65536)"],
                                  timeout=60, limit=100_000)
    assert code is None  # cut: no exit status to speak of
    assert out == "y" * 100_000
    assert time.monotonic() - started < 30  # stopped at the limit, not at the timeout


def test_output_under_the_limit_comes_whole_with_the_exit_status_and_stderr_merged():
    script = "import sys\nsys.stdout.write('x' * 3_000_000)\nsys.stdout.flush()\nsys.stderr.write('done')\nsys.exit(3)"
    code, out = procs.run_bounded([sys.executable, "-c", script], timeout=60, limit=4_000_000)
    assert code == 3 and out == "x" * 3_000_000 + "done"
    code, out = procs.run_bounded([sys.executable, "-c", script], timeout=60, limit=4_000_000, stderr=False)
    assert out == "x" * 3_000_000


def test_stdin_data_is_fed_while_the_output_is_read():
    data = os.urandom(1 << 20).hex().encode()  # 2 MB: more than a pipe holds, both ways
    code, out = procs.run_bounded([sys.executable, "-c", "import sys\nsys.stdout.write(sys.stdin.read())"],
                                  timeout=60, stdin_data=data, limit=len(data))
    assert code == 0 and out.encode() == data


def test_a_hanging_command_times_out_and_its_whole_group_is_gone(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    with pytest.raises(procs.Timeout):
        procs.run_bounded([sys.executable, "-c", HANGING_PARENT, str(pid_file), "plain"], timeout=3)
    assert time.monotonic() - started < 20
    grandchild = int(_wait_for_file(pid_file))
    assert _gone(grandchild), "the grandchild outlived the timeout"


def test_a_command_that_cannot_start_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        procs.run_bounded([str(tmp_path / "no-such-program")], timeout=5)


# -- stopping a group --------------------------------------------------------------------------------

def _start(pid_file, mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HANGING_PARENT, str(pid_file), mode], start_new_session=True)
    return proc


def test_stop_group_kills_a_grandchild_that_ignores_sigterm_after_the_grace(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    proc = _start(pid_file, "ignore-term")
    grandchild = int(_wait_for_file(pid_file))
    started = time.monotonic()
    procs.stop_group(proc, grace=1.0)
    took = time.monotonic() - started
    assert proc.returncode == -signal.SIGTERM  # the leader took the polite signal
    assert _gone(grandchild)
    assert 0.9 <= took < 10  # the grace was given to the group, then SIGKILL


def test_stop_group_lets_a_child_clean_up_within_the_grace(tmp_path):
    done = tmp_path / "cleaned"
    script = textwrap.dedent(f"""
        import signal, sys, time
        def bye(*_):
            open({str(done)!r}, "w").write("yes")
            sys.exit(0)
        signal.signal(signal.SIGTERM, bye)
        open({str(tmp_path / "ready")!r}, "w").write("ready\\n")
        time.sleep(300)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    _wait_for_file(tmp_path / "ready")
    procs.stop_group(proc, grace=5.0)
    assert proc.returncode == 0 and done.read_text() == "yes"


def test_stop_group_without_grace_kills_at_once_and_is_harmless_twice(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    proc = _start(pid_file, "ignore-term")
    grandchild = int(_wait_for_file(pid_file))
    procs.stop_group(proc)
    assert proc.returncode == -signal.SIGKILL and _gone(grandchild)
    procs.stop_group(proc)  # already gone: nothing to do, no error


def test_clean_env_leaves_a_child_python_its_own_defaults(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("PYTHONHOME", "/elsewhere")
    monkeypatch.setenv("CR_KEEP_ME", "1")
    env = procs.clean_env()
    assert "PYTHONPATH" not in env and "PYTHONHOME" not in env and env["CR_KEEP_ME"] == "1"
    assert os.environ["PYTHONPATH"] == "/somewhere"  # ours untouched


# -- the atomic streamed writer ----------------------------------------------------------------------

def test_a_streamed_write_appears_whole_and_only_at_the_end(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with atomic_file(target, "w", encoding="utf-8") as f:
        for i in range(1000):
            f.write(f"row {i}\n")
            if i == 500:
                f.flush()
                assert target.read_text() == "old\n"  # readers still see the old file
        [temp] = [p for p in tmp_path.iterdir() if p != target]
        assert temp.name.startswith(".out.csv.") and temp.name.endswith(".tmp")
    assert target.read_text() == "".join(f"row {i}\n" for i in range(1000))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


@pytest.mark.parametrize("existed", [True, False])
def test_an_exception_leaves_nothing_and_the_old_file_as_it_was(tmp_path, existed):
    target = tmp_path / "data" / "out.bin"
    if existed:
        target.parent.mkdir()
        target.write_bytes(b"old")
    with pytest.raises(ValueError, match="half way"):
        with atomic_file(target) as f:
            f.write(b"new" * 10000)
            raise ValueError("half way")
    assert sorted(p.name for p in target.parent.iterdir()) == (["out.bin"] if existed else [])
    if existed:
        assert target.read_bytes() == b"old"


def test_a_killed_writer_never_leaves_a_half_file(tmp_path):
    target = tmp_path / "result.json"
    target.write_bytes(b"old")
    script = textwrap.dedent(f"""
        import sys, time
        from cr.fsutil import atomic_file
        with atomic_file({str(target)!r}) as f:
            f.write(b"x" * 1_000_000)
            f.flush()
            print("half", flush=True)
            time.sleep(300)
            f.write(b"y")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=os.path.dirname(os.path.dirname(__file__)))
    try:
        assert proc.stdout.readline() == b"half\n"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.stdout.close()
    assert target.read_bytes() == b"old"
    [temp] = [p for p in tmp_path.iterdir() if p != target]
    assert temp.stat().st_size == 1_000_000  # the half file is a hidden temp, never the target


def test_write_errors_name_the_file_and_say_what_to_do(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StoreError) as err:
        with atomic_file(blocker / "out.json", hint="give another --out") as f:
            f.write(b"{}")
    assert str(blocker / "out.json") in err.value.message and err.value.hint == "give another --out"
    with pytest.raises(StoreError) as err:  # an OSError of the write itself (disk full, say)
        with atomic_file(tmp_path / "out.json") as f:
            raise OSError(28, "No space left on device")
    assert "No space left on device" in err.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_files_get_the_mode_open_would_give_and_names_the_caller_chooses(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_bytes(tmp_path / "meta.json", b"{}", durable=True)
        with atomic_file(tmp_path / "site.html", prefix=".site.html.pack-", suffix=f".{os.getpid()}.tmp") as f:
            [temp] = [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")]
            f.write(b"<html>")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "meta.json").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "site.html").stat().st_mode) == 0o640
    assert temp.startswith(".site.html.pack-") and temp.endswith(f".{os.getpid()}.tmp")


# -- sqlite caches -----------------------------------------------------------------------------------

SCHEMA = "CREATE TABLE items (n INTEGER PRIMARY KEY, text TEXT NOT NULL)"


class Cache:
    """A cache's owner as cr.store.index and cr.results.store are: rebuilt from its 'files' (ROWS)."""

    ROWS = 2000

    def __init__(self, path):
        self.path, self.rebuilds = path, 0
        new = not os.path.exists(path)
        try:
            self.db = sqlcache.connect(path, "1", SCHEMA)
            if new:
                self._fill(self.db)
        except sqlite3.DatabaseError as exc:
            if not sqlcache.damaged(exc):
                raise
            self.rebuild(exc)

    def _fill(self, db):
        db.execute("BEGIN")
        db.executemany("INSERT INTO items VALUES (?, ?)", ((i, "x" * 200) for i in range(self.ROWS)))
        db.execute("COMMIT")
        return db

    def rebuild(self, exc):
        if getattr(self, "db", None) is not None:
            self.db.close()
        sqlcache.discard(self.path, "test cache", exc)
        self.db = self._fill(sqlcache.connect(self.path, "1", SCHEMA))
        self.rebuilds += 1

    @sqlcache.recovering(lambda self, exc: self.rebuild(exc))
    def total(self):
        return self.db.execute("SELECT count(*), sum(length(text)) FROM items").fetchone()


@pytest.fixture
def warnings():
    collected = CollectingReporter()
    old = set_reporter(collected)
    yield collected.warnings
    set_reporter(old)


def test_a_file_that_is_not_a_database_is_deleted_and_rebuilt(tmp_path, warnings):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database, it is garbage " * 100)
    (tmp_path / "cache.sqlite-wal").write_bytes(b"stale")
    cache = Cache(path)
    assert cache.rebuilds == 1 and cache.total() == (Cache.ROWS, Cache.ROWS * 200)
    assert any(f"test cache {path} was damaged" in w and "rebuilding it" in w for w in warnings)
    cache.db.close()


def test_damage_found_by_a_query_rebuilds_the_cache_and_asks_again(tmp_path, warnings):
    path = tmp_path / "cache.sqlite"
    Cache(path).db.close()  # the last connection checkpoints the WAL into the file
    assert not os.path.exists(f"{path}-wal")
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as f:  # the table's leaf pages (pages 1-3: schema, info, the table's root) become garbage
        f.seek(4 * page)
        f.write(os.urandom(page) * 20)
    cache = Cache(path)  # opening reads only the schema and the version: the damage is not seen yet
    assert cache.rebuilds == 0
    assert cache.total() == (Cache.ROWS, Cache.ROWS * 200)
    assert cache.rebuilds == 1 and any("was damaged" in w for w in warnings)
    cache.db.close()


def test_a_cache_of_another_version_is_emptied_and_re_created(tmp_path):
    path = tmp_path / "cache.sqlite"
    db = sqlcache.connect(path, "1", SCHEMA + "; CREATE TABLE gone (x)")
    db.execute("INSERT INTO items VALUES (1, 'kept')")
    db.close()
    db = sqlcache.connect(path, "1", SCHEMA)
    assert db.execute("SELECT text FROM items").fetchall() == [("kept",)]  # same version: kept
    db.close()
    db = sqlcache.connect(path, "2", SCHEMA)
    assert db.execute("SELECT count(*) FROM items").fetchone() == (0,)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"info", "items"}  # a table the new version does not declare is dropped
    assert sqlcache.stored_version(db) == "2"
    db.close()


def test_connect_waits_out_a_writer_instead_of_failing_at_the_switch_to_wal(tmp_path):
    """SQLite refuses a journal-mode change at once (no busy handler) while another connection
    holds a write lock: connect must wait for it like any other lock (eight processes
    creating a fresh results store together lost all but one to this)."""
    path = tmp_path / "cache.sqlite"
    holder = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE x (a)")
    holder.execute("BEGIN IMMEDIATE")  # a writer in rollback mode (an older cache, or a race)
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        db = sqlcache.connect(path, "1", SCHEMA)
    finally:
        release.join()
        holder.close()
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert sqlcache.stored_version(db) == "1"
    db.close()


def test_many_connections_creating_one_cache_at_once_all_succeed(tmp_path):
    failures = []
    for round_ in range(40):
        path = tmp_path / f"cache{round_}.sqlite"
        barrier = threading.Barrier(8)

        def connect():
            barrier.wait()
            try:
                sqlcache.connect(path, "1", SCHEMA).close()
            except sqlite3.OperationalError as exc:
                failures.append(str(exc))

        threads = [threading.Thread(target=connect) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


def test_a_locked_database_is_not_damage_and_is_never_deleted(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = Cache(path)
    calls = []

    class Owner:
        @sqlcache.recovering(lambda self, exc: calls.append(exc))
        def query(self):
            raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError):
        Owner().query()
    assert calls == [] and path.exists()
    assert sqlcache.damaged(sqlite3.DatabaseError("file is not a database"))
    assert not sqlcache.damaged(sqlite3.OperationalError("database is locked"))
    cache.db.close()
