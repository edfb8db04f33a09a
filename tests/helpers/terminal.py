"""A real pseudo-terminal for CLI tests: what a user's terminal shows (tables fitted to its
width, live progress lines, prompts)."""
from __future__ import annotations

import os
import select
import time


def open_terminal(columns: int = 100, rows: int = 24) -> tuple[int, int]:
    """(master, slave) of a new pty whose window is columns x rows."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    return master, slave


def read_terminal(master: int, proc, timeout: float, answer=None) -> bytes:
    """Everything the program writes to the terminal until it closes it, exits, or timeout
    seconds pass. answer(seen) -> bytes | None is asked after each read: bytes are typed in."""
    seen, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the program closed its side
                break
            if not chunk:
                break
            seen += chunk
            typed = answer(seen) if answer else None
            if typed:
                os.write(master, typed)
        elif proc.poll() is not None:
            break
    return seen
