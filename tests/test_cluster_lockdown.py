"""A campaign cluster runs only cr's jobs (docs/security.md, "The campaign cluster").

A real `cr scheduler` and `cr worker` on 127.0.0.1, plain and with mutual TLS, attacked the
way issue 24 found them open: a plain distributed.Client (with a worker's certificate under
TLS) tries every Dask route that runs or imports code on the scheduler or a worker, and a
peer that speaks cr's own wire says what its role may not. Every payload would create a
marker file if anything ran it; a control run of the same payloads here proves they would.
After the attacks the cluster still runs a campaign."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_component, make_repo
from helpers.campaign import null_solution
from helpers.cluster import listening, make_certs, start_cr as _start, stop_all as _stop, wait_line as _wait_line

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

SCHEDULER_ROUTES = ("run_on_scheduler", "run_on_scheduler_builtin", "scheduler_plugin", "upload_file",
                    "task_argument", "rpc_pickled_argument", "raw_dask_frames", "raw_frames_after_cr_magic",
                    "fake_started_event")
WORKER_ROUTES = ("scatter", "scatter_direct", "update_data", "run_on_workers", "worker_plugin", "nanny_plugin")
ROUTES = SCHEDULER_ROUTES + WORKER_ROUTES

# What an attacker runs: each route with a payload that writes MARK/<route> when unpickled or
# called. argv: marker folder, scheduler address, [ca, cert, key] or null, the worker's ports, the route.
ATTACK = r'''
import asyncio, json, os, pickle, signal, socket, ssl, struct, sys
MARK, ADDR, TLS, WORKER_PORTS = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
from distributed import Client, Security
from distributed.diagnostics.plugin import NannyPlugin, SchedulerPlugin, WorkerPlugin
from distributed.protocol import ToPickle, dumps

sec = Security(tls_ca_file=TLS[0], tls_client_cert=TLS[1], tls_client_key=TLS[2], require_encryption=True) if TLS else None

def code(route):
    return f"open({os.path.join(MARK, route)!r}, 'w').write(str(__import__('os').getpid()))"

class Evil:
    def __init__(self, route):
        self.route = route
    def __reduce__(self):
        return (exec, (code(self.route),))

def evil_fn(route):
    def f(*args, **kwargs):
        exec(code(route))
        return "ran"
    return f

class SPlug(SchedulerPlugin):
    name = "evil"
    def __init__(self):
        exec(code("control_scheduler_plugin_made"))
    def __setstate__(self, state):
        exec(code("scheduler_plugin"))
    async def start(self, scheduler):
        exec(code("scheduler_plugin"))

class WPlug(WorkerPlugin):
    name = "evil"
    def setup(self, worker):
        exec(code("worker_plugin"))

class NPlug(NannyPlugin):
    name = "evil"
    def setup(self, nanny):
        exec(code("nanny_plugin"))

results = {}

class Hung(Exception):
    pass

def hung(*_):
    raise Hung("no answer within 20 s")

signal.signal(signal.SIGALRM, hung)

def attempt(route, action):
    signal.alarm(20)  # distributed may wait forever on a peer that is not a Dask one
    try:
        try:
            client = Client(ADDR, security=sec, timeout=3, set_as_default=False)
        except BaseException as exc:
            results[route] = f"no connection: {type(exc).__name__}"
            return
        try:
            action(client)
            results[route] = "accepted"
        except BaseException as exc:
            results[route] = f"refused: {type(exc).__name__}: {exc}"[:300]
        finally:
            try:
                client.close(timeout=3)
            except BaseException:
                pass
    finally:
        signal.alarm(0)

async def direct(addr, msg):
    from distributed.comm import connect
    comm = await connect(addr, timeout=3, **(sec.get_connection_args("client") if sec else {}))
    await comm.write(msg)
    return await comm.read()

def attempt_direct(route, addr, msg):
    try:
        asyncio.run(asyncio.wait_for(direct(addr, msg), 20))
        results[route] = "accepted"
    except BaseException as exc:
        results[route] = f"refused: {type(exc).__name__}"

def raw(route, prefix):
    frames = dumps({"op": "run_function", "function": ToPickle(Evil(route)), "args": ToPickle((Evil(route),))})
    frames = [bytes(f) for f in frames]
    prelude = struct.pack(f"Q{len(frames)}Q", len(frames), *map(len, frames))
    data = prefix + struct.pack("Q", len(prelude) + sum(map(len, frames))) + prelude + b"".join(frames)
    host, port = ADDR.split("://")[1].rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
        if TLS:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.load_verify_locations(TLS[0])
            ctx.load_cert_chain(TLS[1], TLS[2])
            s = ctx.wrap_socket(s)
        s.settimeout(20)
        s.sendall(data)
        got = s.recv(1 << 16) + s.recv(1 << 16)
        results[route] = f"sent {len(data)} bytes; the scheduler answered {len(got)} bytes and closed"
    except OSError as exc:
        results[route] = f"refused: {type(exc).__name__}"

ROUTE = sys.argv[5]
proto = "tls" if TLS else "tcp"
module = os.path.join(MARK, "..", "evil_upload_mod.py")
if ROUTE == "control":  # these payloads run code when unpickled or called here
    pickle.loads(pickle.dumps(Evil("control_unpickled")))
    evil_fn("control_called")()
    results["control"] = "ran here"
elif ROUTE == "run_on_scheduler":
    attempt(ROUTE, lambda c: c.run_on_scheduler(evil_fn(ROUTE)))
elif ROUTE == "run_on_scheduler_builtin":
    attempt(ROUTE, lambda c: c.run_on_scheduler(exec, code(ROUTE)))
elif ROUTE == "scheduler_plugin":
    attempt(ROUTE, lambda c: c.register_plugin(SPlug()))
elif ROUTE == "upload_file":
    open(module, "w").write(code(ROUTE) + "\n")
    attempt(ROUTE, lambda c: c.upload_file(module))
elif ROUTE == "task_argument":
    attempt(ROUTE, lambda c: c.submit(len, Evil(ROUTE), pure=False).result(timeout=5))
elif ROUTE == "rpc_pickled_argument":
    attempt_direct(ROUTE, ADDR, {"op": "run_function", "function": ToPickle(Evil(ROUTE))})
elif ROUTE == "raw_dask_frames":
    raw(ROUTE, b"")
elif ROUTE == "raw_frames_after_cr_magic":
    raw(ROUTE, b"cr-cluster/1\n")
elif ROUTE == "fake_started_event":
    attempt(ROUTE, lambda c: c.log_event("cr-campaign", {"job": "x", "event": "started", "cr_worker": "ghost"}))
elif ROUTE == "scatter":
    attempt(ROUTE, lambda c: c.scatter(Evil(ROUTE), timeout=5))
elif ROUTE == "scatter_direct":
    attempt(ROUTE, lambda c: c.scatter(Evil(ROUTE), direct=True, timeout=5))
elif ROUTE == "update_data":
    msg = {"op": "update_data", "data": {"x": ToPickle(Evil(ROUTE))}}
    if WORKER_PORTS:
        for port in WORKER_PORTS:
            attempt_direct(ROUTE, f"{proto}://127.0.0.1:{port}", msg)
    else:
        attempt_direct(ROUTE, ADDR, msg)
        results[ROUTE] = "the worker listens on no port; sent to the scheduler's: " + results[ROUTE]
elif ROUTE == "run_on_workers":
    attempt(ROUTE, lambda c: c.run(evil_fn(ROUTE)))
elif ROUTE == "worker_plugin":
    attempt(ROUTE, lambda c: c.register_plugin(WPlug()))
elif ROUTE == "nanny_plugin":
    attempt(ROUTE, lambda c: c.register_plugin(NPlug()))
print(json.dumps(results), flush=True)
os._exit(0)  # distributed's threads may hold the exit of a client that never connected
'''


DASK_EVENTS = r'''
import json, sys, time
from distributed import Client
addr, ids = sys.argv[1], json.loads(sys.argv[2])
try:
    client = Client(addr, timeout=3, set_as_default=False)
except BaseException as exc:
    print("no connection:", type(exc).__name__)
    raise SystemExit(0)
end = time.monotonic() + 30
n = 0
while time.monotonic() < end:
    for i, jid in enumerate(ids):
        client.log_event("cr-campaign", {"job": jid, "event": "started", "cr_worker": f"invented-{n}-{i}"})
    n += 1
    time.sleep(0.05)
print("sent", n * len(ids))
'''


def _cluster(base: Path, tls: dict | None):
    """(address, coordinator env, scheduler, worker, the coordinator's --tls-* args, repo)."""
    env = {**os.environ, "CR_HOME": str(base / "coordinator")}
    env.pop("PYTHONWARNINGS", None)
    sched_tls = tls["coordinator"] if tls else []
    worker_tls = tls["worker"] if tls else []
    sched = _start(["scheduler", "--port", "0", *sched_tls], env, base / "scheduler.log")
    addr = _wait_line(base / "scheduler.log", "scheduler at", sched).split()[-1]
    worker = _start(["worker", "--scheduler", addr, "--name", "w1", "--cr-home", base / "home-w1", *worker_tls],
                    env, base / "w1.log")
    _wait_line(base / "w1.log", "worker w1", worker)
    repo = make_repo(base / "comps", "comps")
    null_solution(repo)
    assert subprocess.run([sys.executable, "-m", "cr", "repo", "add", str(repo)], env=env, capture_output=True).returncode == 0
    return addr, env, sched, worker, sched_tls, repo


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    base = tmp_path_factory.mktemp("plain")
    addr, env, sched, worker, tls, repo = _cluster(base, None)
    yield {"addr": addr, "env": env, "sched": sched, "worker": worker, "tls": tls, "repo": repo, "base": base,
           "attacker_tls": None}
    _stop([worker, sched])


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    base = tmp_path_factory.mktemp("tls")
    ca, made = make_certs(base / "certs", ("coordinator", "worker"))
    args = {who: ["--tls-ca-file", ca, "--tls-cert", made[who][0], "--tls-key", made[who][1]] for who in made}
    addr, env, sched, worker, tls, repo = _cluster(base, args)
    yield {"addr": addr, "env": env, "sched": sched, "worker": worker, "tls": tls, "repo": repo, "base": base,
           "attacker_tls": [str(ca), str(made["worker"][0]), str(made["worker"][1])]}
    _stop([worker, sched])


@pytest.fixture(scope="module", params=["plain", "tls-worker-cert"])
def attacked(request, tmp_path_factory):
    """The cluster after every route was tried, each by an attacker process of its own (all at
    once, each stopped after 90 s): (cluster, {route: what happened}, marker folder)."""
    cluster = request.getfixturevalue("plain" if request.param == "plain" else "secure")
    marks = tmp_path_factory.mktemp("marks")
    ports = [p for _, p in listening(cluster["worker"].pid)]
    procs = {route: subprocess.Popen([sys.executable, "-c", ATTACK, str(marks), cluster["addr"],
                                      json.dumps(cluster["attacker_tls"]), json.dumps(ports), route],
                                     env=cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for route in ("control", *ROUTES)}
    results = {}
    deadline = time.monotonic() + 90
    for route, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            results[route] = "the attacker got no answer within 90 s"
            continue
        assert proc.returncode == 0, err[-3000:]
        results.update(json.loads(out.strip().splitlines()[-1]))
    return cluster, results, marks


def _cr(env, *args, timeout=180):
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)


def _campaign_runs(cluster, name: str, repeat: int = 1) -> list[dict]:
    make_component(cluster["repo"], "campaign", name, solutions=["solution:null-digits"], repeat=repeat)
    done = _cr(cluster["env"], "campaign", "run", name, "--scheduler", cluster["addr"], *cluster["tls"], "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("route", ROUTES)
def test_no_route_runs_code(attacked, route):
    cluster, results, marks = attacked
    assert (marks / "control_unpickled").exists() and (marks / "control_called").exists()  # the payloads are live
    assert route in results, results
    assert results[route] != "accepted", results[route]
    assert not (marks / route).exists(), f"{route} ran code in process {(marks / route).read_text()}"


def test_after_every_attack_nothing_ran_and_the_cluster_still_runs_a_campaign(attacked):
    cluster, results, marks = attacked
    ran = sorted(p.name for p in marks.iterdir() if not p.name.startswith("control_"))
    assert ran == [], ran
    assert len(results) == len(ROUTES) + 1
    assert cluster["sched"].poll() is None and cluster["worker"].poll() is None
    tag = "tls" if cluster["attacker_tls"] else "plain"
    rows = _campaign_runs(cluster, f"after-{tag}")
    assert [(r["state"], r["worker"]) for r in rows] == [("done", "w1")]


@pytest.mark.parametrize("which", ["plain", "secure"])
def test_the_scheduler_listens_on_loopback_only_and_the_worker_nowhere(request, which):
    cluster = request.getfixturevalue(which)
    port = int(cluster["addr"].rsplit(":", 1)[1])
    assert listening(cluster["sched"].pid) == [("127.0.0.1", port)]
    assert listening(cluster["worker"].pid) == []


def _hello(addr, role="coordinator", **fields):
    from cr.campaign.link import connect

    link = connect(addr, None, 10)
    link.send({"op": "hello", "role": role, **fields})
    msg, _ = link.recv(timeout=10)
    return link, msg


def _ends(link) -> bool:
    """True when the scheduler closes the link (within 10 s)."""
    from cr.campaign.link import LinkError

    try:
        while True:
            link.recv(timeout=10)
    except LinkError as exc:
        return "silent" not in str(exc)


def test_a_peer_on_crs_wire_can_say_only_what_its_role_may(plain):
    addr = plain["addr"]
    # a coordinator cannot send a worker's messages, nor anything else
    for op in ("started", "result", "run_function", "update_data"):
        link, welcome = _hello(addr)
        assert welcome["op"] == "welcome"
        link.send({"op": op, "key": "cr-job-x", "worker": "w1", "function": "os.system"})
        assert _ends(link), op
    # a second worker cannot take a connected worker's name
    link, answer = _hello(addr, "worker", name="w1", info={}, resources={"benchmark": 1})
    assert answer["op"] == "refused" and "already connected" in answer["message"]
    link.close()
    # a worker cannot send a scheduler's or a coordinator's messages
    for op in ("job", "submit", "workers"):
        link, answer = _hello(addr, "worker", name=f"ghost-{op}", info={}, resources={})
        assert answer["op"] == "welcome"
        link.send({"op": op, "jobs": []})
        assert _ends(link), op
    # bytes that do not match their sha256 end the link before anything is kept
    link, _ = _hello(addr)
    link.send({"op": "archive", "sha256": "0" * 64}, [b"not that"])
    assert _ends(link)
    assert plain["sched"].poll() is None and plain["worker"].poll() is None


def test_fake_events_and_results_do_not_fail_a_campaign(plain):
    """While a campaign runs, a ghost worker sends results and losses for its jobs and a
    second coordinator sends started events with invented worker names and cancels them:
    every job is done by w1, once."""
    import threading

    addr, env, repo = plain["addr"], plain["env"], plain["repo"]
    make_component(repo, "campaign", "fake-events", solutions=["solution:null-digits"], repeat=4)
    shown = json.loads(_cr(env, "campaign", "show", "fake-events", "--jobs", "--json").stdout)
    keys = [f"cr-job-{j['id']}" for j in shown["jobs"]]
    run = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "fake-events", "--scheduler", addr, "--json"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # a plain Dask client announcing the jobs "started" on invented workers (what failed 6 of 6 jobs)
    dask_spoofer = subprocess.Popen([sys.executable, "-c", DASK_EVENTS, addr, json.dumps([j["id"] for j in shown["jobs"]])],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stop = threading.Event()
    sent = {"ghost": 0, "coordinator": 0}

    def spoof():
        from cr.campaign.link import LinkError

        ghost, answer = _hello(addr, "worker", name="ghost", info={"platform": {}}, resources={})
        assert answer["op"] == "welcome"
        while not stop.is_set():
            for key in keys:
                failed = {"status": "failed", "records": [], "error": {"message": "spoofed", "hint": None}}
                ghost.send({"op": "result", "key": key, "outcome": failed, "latencies": []})
                sent["ghost"] += 1
                try:
                    other, _ = _hello(addr)
                    other.send({"op": "cancel", "keys": keys})
                    other.send({"op": "started", "key": key, "worker": "invented-" + key[-4:], "attempt": 1})
                    sent["coordinator"] += 1
                    other.close()
                except LinkError:
                    pass
            time.sleep(0.05)
        ghost.close()

    spoofer = threading.Thread(target=spoof, daemon=True)
    spoofer.start()
    try:
        out, err = run.communicate(timeout=240)
    finally:
        stop.set()
        spoofer.join(timeout=30)
    spoofed = dask_spoofer.communicate(timeout=120)[0]
    assert "no connection" in spoofed, spoofed[-2000:]
    assert sent["ghost"] > 0 and sent["coordinator"] > 0
    assert run.returncode == 0, err
    rows = json.loads(out)
    assert len(rows) == 4 and {(r["state"], r["worker"], r["attempts"]) for r in rows} == {("done", "w1", 1)}
    status = json.loads(_cr(env, "campaign", "status", "fake-events", "--json").stdout)
    assert all(s["failed_attempts"] == [] for s in status)


def test_a_cluster_off_loopback_without_tls_is_refused_unless_asked(tmp_path):
    env = {**os.environ, "CR_HOME": str(tmp_path / "home")}
    env.pop("PYTHONWARNINGS", None)
    done = _cr(env, "scheduler", "--host", "0.0.0.0", "--port", "0", timeout=60)
    assert done.returncode == 1 and "without TLS" in done.stderr and "--insecure-no-tls" in done.stderr
    assert "Traceback" not in done.stderr
    done = _cr(env, "worker", "--scheduler", "tcp://192.0.2.1:8786", "--name", "far", timeout=60)
    assert done.returncode == 1 and "without TLS" in done.stderr
    make_repo(tmp_path / "comps", "comps")
    make_component(tmp_path / "comps", "campaign", "far", solutions=["solution:lenet-digits-onnxruntime"])
    assert _cr(env, "repo", "add", tmp_path / "comps").returncode == 0
    done = _cr(env, "campaign", "run", "far", "--scheduler", "tcp://192.0.2.1:8786", timeout=60)
    assert done.returncode == 1 and "without TLS" in done.stderr
    # asked for: it listens where told, and says nothing is protected
    sched = _start(["scheduler", "--host", "0.0.0.0", "--port", "0", "--insecure-no-tls"], env, tmp_path / "s.log")
    try:
        addr = _wait_line(tmp_path / "s.log", "scheduler at", sched).split()[-1]
        port = int(addr.rsplit(":", 1)[1])
        assert listening(sched.pid) == [("0.0.0.0", port)]
    finally:
        _stop([sched])


def test_the_wire_refuses_oversized_and_malformed_messages(plain):
    import socket

    from cr.campaign.link import MAGIC, MAX_HEADER

    host, port = plain["addr"].split("://")[1].rsplit(":", 1)
    for body in ((MAX_HEADER + 1).to_bytes(4, "big"), (5).to_bytes(4, "big") + b"[1,2]",
                 (30).to_bytes(4, "big") + b'{"op":"hello","_blobs":[-1]}  ',
                 (9).to_bytes(4, "big") + b'{"op":1}]'):
        s = socket.create_connection((host, int(port)), timeout=10)
        assert s.recv(len(MAGIC)) == MAGIC
        s.sendall(MAGIC + body)
        assert s.recv(100) == b""  # closed, nothing answered
        s.close()
    assert plain["sched"].poll() is None


def test_two_coordinators_with_the_same_job_each_get_their_own_result(plain):
    """Jobs are a coordinator's own: the same key from two coordinators runs twice, and each
    result goes back to the coordinator that submitted it."""
    job = {"id": "1" * 16, "solution": "solution:x@1", "solution_uid": "1" * 16, "solution_sha256": "1" * 64,
           "overrides": {}, "platform": "any", "target": {}, "repetition": 0, "actions": None, "params": {}}
    links = []
    for _ in range(2):
        link, welcome = _hello(plain["addr"])
        assert welcome["op"] == "welcome"
        links.append(link)
    for link in links:
        link.send({"op": "submit", "jobs": [{"key": "same", "job": job, "kind": "noop", "sha256": None,
                                            "needs": {"benchmark": 1}, "workers": ["w1"], "retries": 0}]})
    for link in links:
        seen = []
        while "result" not in seen:
            msg, _ = link.recv(timeout=30)
            if msg["op"] != "workers":
                assert msg["key"] == "same" and msg["worker"] == "w1"
                seen.append(msg["op"])
        assert seen == ["started", "result"] and msg["outcome"]["status"] == "ok"
        link.close()
