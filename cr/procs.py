"""Child processes: bounded, stoppable, and never outliving cr.

    subprocess.Popen(cmd, preexec_fn=die_with_parent())                 # SIGKILL when cr dies
    subprocess.Popen(cmd, preexec_fn=die_with_parent(signal.SIGTERM))   # git: lets it drop its locks
    stop_group(proc, grace=2.0)          # SIGTERM to its process group, SIGKILL what is left
    code, text = run_bounded(cmd, 10.0)  # at most 10 s and OUTPUT_LIMIT bytes, whatever it does
    env = clean_env()                    # for a child python: no PYTHONPATH/PYTHONHOME of ours

A child that may start children of its own runs in its own session (start_new_session=True),
so that stopping it stops its whole process group: a shell wrapper's grandchild cannot keep
running, or keep our pipes open, after cr gave up on it.

A `kill -9` of cr gives its children no chance to be stopped by cr; on Linux the kernel
does it: die_with_parent() returns a preexec_fn that sets PR_SET_PDEATHSIG in the child
right after fork, then checks getppid() (cr may already be gone by then, and the signal
would never come). Elsewhere it returns None (Popen's default: no preexec_fn), so the same
call works on every platform.

Linux sends the signal when the *thread* that started the child exits, not the process:
start long-lived children from a thread that lives as long as they should (cr starts
them from the thread that waits for them).

Standard library only, no cr imports: any layer may use it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Callable

PR_SET_PDEATHSIG = 1

_prctl = None  # resolved in the parent, once: no dlopen/dlsym between fork and exec


def _load_prctl():
    global _prctl
    if _prctl is None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.prctl
        fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        fn.restype = ctypes.c_int
        _prctl = fn
    return _prctl


def supported() -> bool:
    """Whether children can be tied to this process's life here (Linux with prctl)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        _load_prctl()
    except (OSError, AttributeError):
        return False
    return True


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A preexec_fn for subprocess.Popen: the child receives sig when this process dies.

    None where that is not possible (not Linux, no prctl): pass it to Popen as is. The
    returned function runs in the child between fork and exec; after setting the death
    signal it compares getppid() with the pid of the process that called die_with_parent()
    and sends sig to itself if that one is already gone.
    """
    if not supported():
        return None
    prctl = _load_prctl()
    parent = os.getpid()
    signum = int(sig)

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the death signal was armed
            os.kill(os.getpid(), signum)
            os._exit(128 + signum)  # the signal was caught or ignored: do not exec anyway

    return preexec


def popen_kwargs(sig: int = signal.SIGKILL) -> dict:
    """{"preexec_fn": die_with_parent(sig)} where supported, else {}: `Popen(cmd, **popen_kwargs())`."""
    fn = die_with_parent(sig)
    return {"preexec_fn": fn} if fn is not None else {}


# -- stopping a process group -------------------------------------------------------------

REAP_S = 5.0  # how long stop_group waits for the killed leader to be reaped


def stop_group(proc: subprocess.Popen, grace: float = 0.0, reap: float | None = REAP_S) -> None:
    """Stop proc and every process of its group (proc must lead one: start_new_session=True).

    grace > 0: SIGTERM first, and up to grace seconds for the leader to exit and the group to
    empty; then (or at once with grace 0) SIGKILL to whatever is left of the group. The leader
    is reaped: waited for up to reap seconds (None: for as long as it takes). Safe to call on
    a process that already exited. Where there are no process groups (Windows), proc alone
    is terminated, then killed.
    """
    if grace > 0:
        _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        while _group_alive(proc) and time.monotonic() < deadline:
            time.sleep(0.02)
    _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=reap)
    except subprocess.TimeoutExpired:
        pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    if not hasattr(os, "killpg"):  # pragma: no cover - Windows
        try:
            proc.terminate() if sig == signal.SIGTERM else proc.kill()
        except OSError:
            pass
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:  # no group of that id: proc did not lead one, or all of it is gone
        if proc.poll() is None:
            proc.send_signal(sig)
    except PermissionError:  # a member changed its user (setuid): nothing more cr may do
        pass


def _group_alive(proc: subprocess.Popen) -> bool:
    """Whether a process of proc's group still exists (its leader once reaped: a zombie counts)."""
    if proc.poll() is None:
        return True
    if not hasattr(os, "killpg"):  # pragma: no cover - Windows
        return False
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- a bounded run --------------------------------------------------------------------------

OUTPUT_LIMIT = 64 * 1024


class Timeout(Exception):
    """run_bounded's command (or another read with a deadline) ran past its time."""


def run_bounded(cmd: list[str], timeout: float, env: dict | None = None, stdin_data: bytes | None = None,
                limit: int = OUTPUT_LIMIT, cwd: str | None = None, stderr: bool = True) -> tuple[int | None, str]:
    """(exit code, output) of cmd, bounded in time and size, its whole process group stopped.

    Timeout after timeout seconds; at most `limit` bytes of output: a command that prints
    more (400 MB of 'y', say) is stopped there, and the exit code is then None and the
    text the first `limit` bytes, so what cr holds never grows with what a command prints.
    The command gets its own session, so that a hanging grandchild (a shell wrapper's child)
    is killed with it and cannot keep the pipe open. stdin_data is written to its stdin
    (default: no stdin). stderr: merged into the output (True) or discarded (False). The
    output is decoded as UTF-8, undecodable bytes replaced. OSError when cmd cannot start.
    """
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if stderr else subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True,
    )
    try:
        out, full = read_bounded(proc, timeout, limit, stdin_data)
        if full:
            stop_group(proc)
    except BaseException:
        stop_group(proc)
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
    return (None if full else proc.returncode), out.decode("utf-8", "replace")


def read_bounded(proc: subprocess.Popen, timeout: float, limit: int, stdin_data: bytes | None = None) -> tuple[bytes, bool]:
    """(output, whether it reached `limit` bytes) of a started proc with stdout=PIPE: feed
    stdin_data (proc needs stdin=PIPE then) and read stdout until it closes and proc exits,
    or until `limit` bytes came; Timeout when that takes longer than timeout seconds.
    Stopping proc is the caller's part (run_bounded does it)."""
    import selectors

    deadline = time.monotonic() + timeout
    kept = bytearray()
    out_fd = proc.stdout.fileno()
    pending = memoryview(stdin_data or b"")
    with selectors.DefaultSelector() as sel:
        sel.register(out_fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            if pending:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        while out_fd in sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            for key, _ in sel.select(left):
                if key.fd == out_fd:
                    chunk = os.read(out_fd, min(1 << 16, limit + 1 - len(kept)))
                    if not chunk:
                        sel.unregister(out_fd)
                        continue
                    kept += chunk
                    if len(kept) > limit:
                        return bytes(kept[:limit]), True
                    continue
                try:
                    pending = pending[os.write(key.fd, pending[:1 << 16]):]
                except BlockingIOError:
                    continue
                except OSError:  # it closed its stdin (BrokenPipeError): it reads no more
                    pending = pending[:0]
                if not pending:
                    sel.unregister(key.fd)
                    proc.stdin.close()
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise Timeout() from None
    return bytes(kept), False


# -- the environment of a child python -----------------------------------------------------

def clean_env() -> dict:
    """Our environment without PYTHONPATH/PYTHONHOME (and the other variables that steer a
    python's start-up), so that a child python sees its own defaults, not cr's."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH"):
        env.pop(key, None)
    return env
