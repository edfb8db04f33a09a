"""The campaign cluster's wire: cr's own framed messages over TCP or mutual TLS.

    link = connect("tls://laptop:8786", Tls(ca, cert, key), timeout=10)   # a worker or a coordinator
    link.send({"op": "submit", ...}, [archive_bytes])
    header, blobs = link.recv()

Why not Dask's protocol: distributed decodes every message with msgpack and unpickles any
``__Pickled__`` part whatever the ``deserializers`` of the comm say
(distributed.protocol.core.loads), its ``dask`` serializer family unpickles the type named
in a header, and scores of its handlers take a pickled function, plugin or graph. A peer
that can open a connection would run code. Here a message is data only:

    MAGIC once each way when a connection opens, then per message:
    4 bytes: n, the header's length (big-endian) | n bytes: a JSON object | its blobs

The header's ``_blobs`` lists the byte lengths of the raw blobs that follow (archives,
latencies). Everything is bounded (header, blob count and sizes) and parsed by cr.jsonio;
nothing received is ever unpickled, imported or called. A message that breaks these rules
ends the connection (LinkError).

TLS is mutual: both sides present a certificate signed by the CA given, and a peer
without one is refused during the handshake.
"""
from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CRError

MAGIC = b"cr-cluster/1\n"
MAX_HEADER = 32 * 1024 * 1024
MAX_BLOBS = 100_000
MAX_BLOB = 1 << 30
MAX_MESSAGE = 2 << 30
HANDSHAKE_S = 10.0
HEARTBEAT_S = 5.0
SILENCE_S = 30.0  # a peer that sent nothing for this long is gone


class LinkError(ConnectionError):
    """The peer went away or broke the wire's rules: the connection is over."""


@dataclass(frozen=True)
class Tls:
    """Mutual TLS from three PEM files: the CA both sides trust, this side's certificate and key."""

    ca: str
    cert: str
    key: str

    def context(self, server: bool) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if not server:
            ctx.check_hostname = False  # the peer is known by its CA-signed certificate, as in distributed
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_cert_chain(self.cert, self.key)
        ctx.load_verify_locations(self.ca)
        return ctx


def security(ca: str | None, cert: str | None, key: str | None) -> Tls | None:
    """Tls from the three --tls-* files, or None when none is given."""
    given = [x for x in (ca, cert, key) if x]
    if not given:
        return None
    if len(given) != 3:
        raise CRError("TLS needs all three of --tls-ca-file, --tls-cert and --tls-key",
                      hint="give the CA certificate, this side's certificate and its private key (docs/campaigns.md)")
    for option, path in (("--tls-ca-file", ca), ("--tls-cert", cert), ("--tls-key", key)):
        if not Path(path).is_file():
            raise CRError(f"{option} {path}: no such file", hint="give the PEM file's path")
    return Tls(str(ca), str(cert), str(key))


def as_tls(value) -> Tls | None:
    """A Tls, None, or what a distributed.Security names (its CA, client certificate and key)."""
    if value is None or isinstance(value, Tls):
        return value
    files = [getattr(value, a, None) for a in ("tls_ca_file", "tls_client_cert", "tls_client_key")]
    if all(isinstance(f, str) for f in files):
        return Tls(*files)
    raise CRError(f"security: {type(value).__name__} names no CA, certificate and key files",
                  hint="give cr.campaign.link.Tls(ca, cert, key), or the --tls-* files")


def address(text: str, sec) -> str:
    """tcp://HOST:PORT (tls:// with TLS) from HOST:PORT or a full address."""
    if "://" not in text:
        text = ("tls://" if sec is not None else "tcp://") + text
    scheme = text.split("://", 1)[0]
    if sec is not None and scheme != "tls":
        raise CRError(f"scheduler address {text} is not a tls:// address, but TLS options were given",
                      hint="write tls://HOST:PORT (or leave out the --tls-* options)")
    if scheme not in ("tcp", "tls"):
        raise CRError(f"scheduler address {text}: unknown protocol {scheme!r}", hint="write tcp://HOST:PORT or tls://HOST:PORT")
    if scheme == "tls" and sec is None:
        raise CRError(f"scheduler address {text} is a tls:// address, but no TLS options were given",
                      hint="give --tls-ca-file, --tls-cert and --tls-key")
    split(text)
    return text


def split(addr: str) -> tuple[str, int]:
    """(host, port) of tcp://HOST:PORT, tls://[::1]:PORT, ..."""
    rest = addr.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CRError(f"scheduler address {addr}: expected HOST:PORT", hint="write tcp://HOST:PORT, e.g. tcp://127.0.0.1:8786")
    return host, int(port)


def join(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def is_loopback(host: str) -> bool:
    """True when every address host names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    try:
        return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)
    except ValueError:
        return False


INSECURE_FLAG = "--insecure-no-tls"


def check_plain(host: str, sec, insecure: bool, what: str) -> None:
    """Refuse a cluster connection off loopback without TLS unless the user said so (insecure)."""
    if sec is not None or insecure or is_loopback(host):
        return
    raise CRError(f"{what} {host} without TLS: anyone who can reach that port could join as a worker and get every "
                  "job's archive and return false results, or submit jobs to the workers, and everything on the wire "
                  "(archives, results) is readable and changeable on the way",
                  hint=f"give --tls-ca-file, --tls-cert and --tls-key (docs/campaigns.md), or {INSECURE_FLAG} on a network "
                       "where you trust every machine")


# -- one connection -------------------------------------------------------------------------

class Link:
    """A connection carrying framed messages; send() may be called from any thread."""

    def __init__(self, sock: socket.socket, peer: str):
        self.sock = sock
        self.peer = peer
        self._send_lock = threading.Lock()
        self._sent_at = time.monotonic()
        self.closed = False

    def send(self, header: dict, blobs=()) -> None:
        blobs = [bytes(b) for b in blobs]
        data = json.dumps({**header, "_blobs": [len(b) for b in blobs]}, separators=(",", ":")).encode()
        if len(data) > MAX_HEADER:
            raise LinkError(f"a message header of {len(data)} bytes is over the limit of {MAX_HEADER}")
        try:
            with self._send_lock:
                self.sock.sendall(struct.pack(">I", len(data)) + data)
                for blob in blobs:
                    self.sock.sendall(blob)
                self._sent_at = time.monotonic()
        except (OSError, ValueError) as exc:
            self.close()
            raise LinkError(f"{self.peer}: {exc}") from None

    def recv(self, timeout: float | None = SILENCE_S) -> tuple[dict, list[bytes]]:
        """The next message other than a heartbeat; LinkError when the peer is gone, silent
        for timeout seconds, or breaks the rules."""
        from ..jsonio import InvalidJSON, loads

        while True:
            self.sock.settimeout(timeout)
            (size,) = struct.unpack(">I", self._exactly(4))
            if size > MAX_HEADER:
                self._broken(f"a header of {size} bytes (the limit is {MAX_HEADER})")
            try:
                header = loads(self._exactly(size), f"a message from {self.peer}", max_bytes=MAX_HEADER, parse_constant=float)
            except InvalidJSON as exc:
                self._broken(exc.message)
            sizes = header.get("_blobs") if isinstance(header, dict) else None
            if (not isinstance(sizes, list) or len(sizes) > MAX_BLOBS
                    or not all(type(s) is int and 0 <= s <= MAX_BLOB for s in sizes) or sum(sizes) > MAX_MESSAGE):
                self._broken("a header that is not an object with a valid _blobs list")
            blobs = [self._exactly(s) for s in sizes]
            if header.get("op") != "alive":
                return header, blobs

    def _exactly(self, n: int) -> bytes:
        # memory grows with what arrives, not with what a header announces
        chunks, got = [], 0
        while got < n:
            try:
                chunk = self.sock.recv(min(n - got, 1 << 20))
            except socket.timeout:
                self._broken("silent for too long")
            except (OSError, ValueError) as exc:
                self.close()
                raise LinkError(f"{self.peer}: {exc}") from None
            if not chunk:
                self.close()
                raise LinkError(f"{self.peer} closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _broken(self, why: str):
        self.close()
        raise LinkError(f"{self.peer}: {why}")

    def heartbeat(self) -> None:
        """Send a heartbeat every HEARTBEAT_S of silence until the link closes (a daemon thread)."""

        def beat():
            while not self.closed:
                time.sleep(1.0)
                if time.monotonic() - self._sent_at >= HEARTBEAT_S:
                    try:
                        self.send({"op": "alive"})
                    except LinkError:
                        return

        threading.Thread(target=beat, daemon=True, name=f"cr-heartbeat-{self.peer}").start()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _greet(sock: socket.socket, peer: str) -> Link:
    sock.settimeout(HANDSHAKE_S)
    sock.sendall(MAGIC)
    got = b""
    while len(got) < len(MAGIC):
        chunk = sock.recv(len(MAGIC) - len(got))
        if not chunk:
            break
        got += chunk
    if got != MAGIC:
        raise LinkError(f"{peer} does not speak cr's cluster protocol")
    return Link(sock, peer)


def connect(addr: str, sec: Tls | None, timeout: float) -> Link:
    """A link to the scheduler at addr (tcp:// or tls://); LinkError (or OSError) when it does not answer."""
    host, port = split(addr)
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if sec is not None:
            sock = sec.context(server=False).wrap_socket(sock)
        return _greet(sock, addr)
    except (OSError, LinkError):
        sock.close()
        raise


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port only (never every interface unless host says so)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if ":" not in host:
        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        except OSError:
            pass
    return socket.create_server((host, port), family=family, reuse_port=False, dualstack_ipv6=False)


def accept(sock: socket.socket, peer: str, sec: Tls | None, ctx: ssl.SSLContext | None) -> Link:
    """The accepted socket as a Link after the TLS and MAGIC handshakes (LinkError, ssl.SSLError)."""
    sock.settimeout(HANDSHAKE_S)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if sec is not None:
        sock = ctx.wrap_socket(sock, server_side=True)
    return _greet(sock, peer)
