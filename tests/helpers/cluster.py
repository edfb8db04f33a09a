"""From tests/test_campaign_cluster.py and tests/test_cluster_lockdown.py: `cr` processes of a
campaign cluster, throwaway TLS certificates, and the sockets a process listens on."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


def start_cr(args, env, log: Path):
    """`python -m cr ARGS...` in a session of its own, its output in log."""
    out = open(log, "w")
    return subprocess.Popen([sys.executable, "-m", "cr", *map(str, args)], stdout=out, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)


def stop_all(procs) -> None:
    """SIGTERM each process group (in the order given), then SIGKILL what has not ended in 15 s."""
    import signal

    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def wait_line(log: Path, word: str, proc, timeout: float = 60) -> str:
    """The first line of log that starts with word (AssertionError if proc ends or time runs out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith(word):
                return line
        assert proc.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"no {word!r} line in {log}: {log.read_text()}")


def make_certs(folder: Path, names=("node",)) -> tuple[Path, dict[str, tuple[Path, Path]]]:
    """A throwaway CA (ca.pem) and, per name, a certificate it signed for 127.0.0.1 and its key,
    made with the openssl command (skips the test without it): (ca, {name: (cert, key)})."""
    import shutil

    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca = folder / "ca.key", folder / "ca.pem"

    def run(*a):
        subprocess.run(["openssl", *map(str, a)], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=test-ca")
    ext = folder / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    out = {}
    for name in names:
        key, csr, cert = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.pem"
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
        run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "1",
            "-extfile", ext)
        out[name] = (cert, key)
    return ca, out


def listening(pid: int) -> list[tuple[str, int]]:
    """The (address, port) pairs process pid listens on (TCP, IPv4 and IPv6): psutil if
    installed, else /proc/net/tcp{,6} matched with /proc/PID/fd."""
    try:
        import psutil
    except ImportError:
        return _listening_proc(pid)
    conns = psutil.Process(pid).net_connections(kind="inet")
    return sorted((c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN)


def _listening_proc(pid: int) -> list[tuple[str, int]]:
    import ipaddress

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            hexaddr, hexport = cols[1].split(":")
            raw = bytes.fromhex(hexaddr)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # per 32-bit word, host order
            out.append((str(ipaddress.ip_address(raw)), int(hexport, 16)))
    return sorted(out)
