"""Child processes that do not outlive cr.

    subprocess.Popen(cmd, preexec_fn=die_with_parent())                 # SIGKILL when cr dies
    subprocess.Popen(cmd, preexec_fn=die_with_parent(signal.SIGTERM))   # git: lets it drop its locks

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
import sys
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
