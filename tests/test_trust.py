"""The trust boundary: nothing that came inside an archive (or a pulled repository) executes or
fetches without the user's consent, and an archive cannot replace shipped components.

Each test builds the hostile archive the way an author would (a repository of their own,
registered with `cr repo add`, packed with `cr pack`), then plays the victim in a fresh
CR_HOME: markers on disk and a loopback listener that records requests show what ran.
"""
from __future__ import annotations

import http.server
import json
import shutil
import threading

import pytest

from conftest import ROOT, make_repo, write_json
from helpers.trust import MARK, author_archive, recipe


class Listener:
    """An HTTP server on 127.0.0.1 that answers 404 and records every request path."""

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def one_error(done) -> str:
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return errors[0]


def test_init_from_an_archive_runs_no_install_script_or_probe_without_consent(tmp_path, run_cr):
    script_marker, probe_marker = tmp_path / f"{MARK}-script", tmp_path / f"{MARK}-probe"
    archive = author_archive(tmp_path, run_cr, [recipe("evil-tool", script_marker, probe_marker)])
    done = run_cr("init", "solution", str(archive))
    error = one_error(done)
    assert "would run code from 'evil-sol-1.0.0'" in error or "would run code from" in error
    assert f"touch {script_marker}" in error and "install script" in error
    assert "--trust" in done.stderr and "cr repo trust" in done.stderr
    assert not script_marker.exists() and not probe_marker.exists()
    # what it refused stays reviewable: the data is there, untrusted
    listed = json.loads(run_cr("repo", "list", "--json").stdout)
    archive_repo = next(r for r in listed if r["origin"] == "archive")
    assert archive_repo["trusted"] is False
    assert run_cr("show", "software:evil-tool").returncode == 0
    # a plain detect does not run the archive's executable probe either
    detected = run_cr("detect", "software", "evil-tool")
    assert not probe_marker.exists(), detected.stderr
    assert "not run" in detected.stderr and "cr repo trust" in detected.stderr


def test_with_trust_the_user_sees_exactly_what_runs_first(tmp_path, run_cr):
    script_marker = tmp_path / f"{MARK}-script"
    archive = author_archive(tmp_path, run_cr, [recipe("evil-tool", script_marker)])
    done = run_cr("init", "solution", str(archive), "--trust")
    assert done.returncode == 0, done.stderr
    listing = done.stderr.index(f"touch {script_marker}")
    assert done.stderr.index("--trust:") < listing < done.stderr.index("installed evil-tool")
    assert script_marker.exists()
    listed = json.loads(run_cr("repo", "list", "--json").stdout)
    assert next(r for r in listed if r["origin"] == "archive")["trusted"] is True


def test_download_urls_and_package_indexes_are_not_fetched_without_consent(tmp_path, run_cr, listener):
    archive = author_archive(tmp_path, run_cr, [
        recipe("fetch-tool", download={"url": f"{listener.url}/tool-1.0.0.tar.gz", "sha256": "0" * 64}),
        recipe("index-tool", pip={"packages": ["index-tool==1.0.0"], "index_url": f"{listener.url}/simple"}),
    ])
    for args in (("init", "solution", str(archive)), ("install", "solution:evil-sol"), ("install", "software", "fetch-tool")):
        done = run_cr(*args)
        error = one_error(done)
        assert listener.url in error or listener.url in done.stderr, done.stderr
    assert listener.hits == []


def test_offline_never_runs_a_script(tmp_path, run_cr):
    marker = tmp_path / f"{MARK}-offline"
    repo = make_repo(tmp_path / "mine", "mine")  # the user's own (trusted) repository
    write_json(repo / "software" / "scripted" / "1.0.0" / "meta.json", recipe("scripted", marker))
    assert run_cr("repo", "add", str(repo)).returncode == 0
    error = one_error(run_cr("install", "software", "scripted", "--offline"))
    assert "--offline never runs" in error
    assert not marker.exists()
    assert run_cr("install", "software", "scripted").returncode == 0 and marker.exists()


def test_an_archive_cannot_replace_a_shipped_recipe(tmp_path, run_cr):
    """The archive's numpy keeps the shipped uid and version but runs a probe: it is ignored."""
    shipped = json.loads((ROOT / "recipes" / "numpy" / "recipe.json").read_text())
    probe_marker = tmp_path / f"{MARK}-numpy"
    hostile = {**shipped, "description": "numpy (hostile copy)",
               "detect": [{"type": "executable", "names": ["/bin/sh"], "args": ["-c", f"touch {probe_marker}; echo 9.9.9"],
                           "regex": r"(\d+\.\d+\.\d+)"}]}
    archive = author_archive(tmp_path, run_cr, [hostile])
    assert run_cr("unpack", str(archive)).returncode == 0
    found = run_cr("find", "software", "--json")
    assert "is not trusted: the one in 'builtin-recipes' is used" in found.stderr or "differs" in found.stderr
    shown = json.loads(run_cr("show", "software:numpy", "--json").stdout)
    assert shown["repo"] == "builtin-recipes"
    # initialising an unrelated shipped solution runs the shipped numpy probe, not the archive's
    run_cr("resolve", "solution:iris-logreg-onnxruntime")
    run_cr("detect", "software", "numpy")
    assert not probe_marker.exists()


def test_a_genuine_archive_adds_no_check_problems(tmp_path, run_cr):
    """Identical copies of shipped components are no news: cr check stays clean after unpack."""
    before = run_cr("check", "--json")
    archive = author_archive(tmp_path, run_cr, [])
    assert run_cr("unpack", str(archive)).returncode == 0
    after = run_cr("check", "--json")
    assert after.returncode == before.returncode, after.stdout[-2000:]
    problems = json.loads(after.stdout)["problems"]
    assert not [p for p in problems if "duplicate" in p["message"]], problems
    found = run_cr("find", "model", "--json")
    assert "shadow" not in found.stderr  # the archive's model is an identical copy


@pytest.mark.slow
def test_an_archived_architecture_file_is_not_imported_without_consent(tmp_path, run_cr):
    """A torch state dict's net.py from an archive is Python: refused until the repo is trusted."""
    marker = tmp_path / f"{MARK}-netpy"
    source = ROOT / "repo" / "model" / "lenet-digits" / "1.0.0"
    model_dir = tmp_path / "author-repo" / "model" / "lenet-netpy" / "1.0.0"
    shutil.copytree(source, model_dir, ignore=shutil.ignore_patterns("generate.py", "__pycache__"))
    net = model_dir / "net.py"
    net.write_text(f"open({str(marker)!r}, 'w').close()\n" + net.read_text())
    meta = json.loads((model_dir / "meta.json").read_text())
    meta.update(name="lenet-netpy", uid="5a5a5a5a5a5a5a5a")
    meta["files"] = {k: v for k, v in meta["files"].items() if k != "generate.py"}
    import hashlib

    meta["files"]["net.py"] = hashlib.sha256(net.read_bytes()).hexdigest()
    write_json(model_dir / "meta.json", meta)
    archive = author_archive(tmp_path, run_cr, [], name="netpy-sol")
    # the solution names iris; unpack it, then point at the archived model directly
    repo_dir = tmp_path / "author-repo"
    # pack the model along: a solution that uses it
    write_json(repo_dir / "solution" / "netpy-sol" / "1.0.0" / "meta.json", {
        "uid": "6b6b6b6b6b6b6b6b", "kind": "solution", "name": "netpy-sol", "version": "1.0.0", "tags": [],
        "model": "model:lenet-netpy@1.0.0", "backend": "torch", "pipeline": {"variant": "state-dict"},
        "actions": [{"action": "benchmark", "params": {"min_duration_s": 0, "min_queries": 5}}], "deps": []})
    archive.unlink()
    author = {"CR_HOME": str(tmp_path / "author-home")}
    done = run_cr("pack", "solution", "netpy-sol", "-o", str(archive.parent), env=author)
    assert done.returncode == 0, done.stderr
    archive = next(archive.parent.glob("netpy-sol-*.cr.zip"))
    assert run_cr("unpack", str(archive)).returncode == 0
    args = ("benchmark", "model", "lenet-netpy", "--backend", "torch", "--variant", "state-dict",
            "--min-duration", "0", "--min-queries", "5", "--inputs", "synthetic")
    error = one_error(run_cr(*args))
    assert "python file" in error and "net.py" in error and meta["files"]["net.py"] in error
    assert not marker.exists()
    # its ONNX variant runs no Python of the archive: allowed
    onnx = run_cr("benchmark", "model", "lenet-netpy", "--backend", "onnxruntime", "--min-duration", "0", "--min-queries", "5")
    assert onnx.returncode == 0, onnx.stderr
    repo_name = next(r["name"] for r in json.loads(run_cr("repo", "list", "--json").stdout) if r["origin"] == "archive")
    assert run_cr("repo", "trust", repo_name).returncode == 0
    done = run_cr(*args)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


def test_repo_trust_lists_and_untrust_takes_it_back(tmp_path, run_cr):
    script_marker = tmp_path / f"{MARK}-script"
    archive = author_archive(tmp_path, run_cr, [recipe("evil-tool", script_marker)])
    unpacked = run_cr("unpack", str(archive))
    assert unpacked.returncode == 0, unpacked.stderr
    name = next(r["name"] for r in json.loads(run_cr("repo", "list", "--json").stdout) if r["origin"] == "archive")
    dry = json.loads(run_cr("repo", "trust", name, "--dry-run", "--json").stdout)
    assert dry["trusted"] is False and any(f"touch {script_marker}" in i["detail"] for i in dry["would_run"])
    assert "(untrusted)" in run_cr("repo", "list").stdout
    assert run_cr("repo", "trust", name).returncode == 0
    assert run_cr("install", "software", "evil-tool").returncode == 0 and script_marker.exists()
    assert run_cr("repo", "untrust", name).returncode == 0
    script_marker.unlink()
    done = run_cr("install", "software", "evil-tool")  # already installed: nothing runs, nothing to refuse
    assert not script_marker.exists(), done.stderr
