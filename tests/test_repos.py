"""Component repositories: pulling with real git, updating, registering, removing.

Every git repository here is a real bare repository under tmp_path, reached through
file:// URLs, so nothing touches the network. Commands go through the real CLI (run_cr)
or through cr.api; both must leave CR_HOME/repos.json valid and CR_HOME/repos clean.
"""
from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import cr.api as api
from cr import fsutil
from cr.errors import CRError, RepoError
from cr.store import registry

from conftest import make_component, make_repo, write_json

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "reefkit tests",
    "GIT_AUTHOR_EMAIL": "tests@reefkit.invalid",
    "GIT_COMMITTER_NAME": "reefkit tests",
    "GIT_COMMITTER_EMAIL": "tests@reefkit.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}

TRACEBACK_MARKS = ("Traceback", "GitCommandError", "git.exc", "cmdline:", 'File "')


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)} failed: {done.stderr}"
    return done.stdout.strip()


class Remote:
    """A bare git repository (the 'server') plus a working clone used to push to it."""

    def __init__(self, root: Path, name: str | None = "team"):
        self.bare = root / f"{name or 'plain'}.git"
        self.work = root / f"{name or 'plain'}-work"
        root.mkdir(parents=True, exist_ok=True)
        git("init", "--quiet", "--bare", "--initial-branch=main", str(self.bare), cwd=root)
        git("init", "--quiet", "--initial-branch=main", str(self.work), cwd=root)
        git("remote", "add", "origin", str(self.bare), cwd=self.work)
        if name is not None:
            make_repo(self.work, name, description="a team repository")

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def component(self, kind: str, name: str, version: str = "1.0.0", **fields) -> Path:
        return make_component(self.work, kind, name, version, **fields)

    def commit(self, message: str = "change", branch: str = "main") -> str:
        git("add", "-A", cwd=self.work)
        git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)

    def tag(self, tag: str, force: bool = False) -> None:
        git("tag", *(["-f"] if force else []), tag, cwd=self.work)
        git("push", "--quiet", *(["--force"] if force else []), "origin", f"refs/tags/{tag}", cwd=self.work)


@pytest.fixture
def remote(tmp_path) -> Remote:
    """A remote holding repo 'team' with model:alpha@1.0.0 and dataset:beta@1.0.0 on main."""
    r = Remote(tmp_path / "server")
    r.component("model", "alpha", "1.0.0", tags=["first"], description="alpha model")
    r.component("dataset", "beta", "1.0.0")
    r.first = r.commit("first")
    return r


def registry_file(home: Path) -> Path:
    return home / "repos.json"


def registry_entries(home: Path) -> list[dict]:
    """repos.json parsed strictly: it must be valid JSON of the documented shape (or absent)."""
    path = registry_file(home)
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == 1
    assert isinstance(data["repos"], list)
    for e in data["repos"]:
        assert {"name", "path", "origin"} <= set(e)
    return data["repos"]


def leftovers(home: Path) -> list[str]:
    """Everything under CR_HOME/repos (clones and temp dirs, hidden ones included)."""
    clones = home / "repos"
    return sorted(p.name for p in clones.iterdir()) if clones.is_dir() else []


def temp_files(home: Path) -> list[str]:
    return sorted(p.name for p in home.glob("*") if p.name.endswith(".tmp") or p.name.startswith(".repos.json"))


def api_refs(repo: str | None = None) -> set[str]:
    return {c.ref for c in api.find(repo=repo)}


def assert_user_error(done, *needles: str) -> list[str]:
    """Exit 1, exactly one 'Error:' line naming every needle, a 'Hint:' line, no traceback."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("Error:")]
    assert len(errors) == 1, done.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    assert any(ln.startswith("Hint: ") and len(ln) > 8 for ln in lines), done.stderr
    for mark in TRACEBACK_MARKS:
        assert mark not in done.stderr, done.stderr
    return lines


def head_of(clone: Path) -> str:
    return git("rev-parse", "HEAD", cwd=clone)


# -- pulling ---------------------------------------------------------------------------

def test_pull_via_cli_registers_the_clone_and_find_shows_its_components(run_cr, remote, cr_home):
    assert "model:alpha@1.0.0" not in api_refs()

    done = run_cr("repo", "pull", remote.url, input="")
    assert done.returncode == 0, done.stderr
    clone = cr_home / "repos" / "team"
    assert f"registered team: {clone}" in done.stdout
    assert head_of(clone) == remote.first
    assert leftovers(cr_home) == ["team"]  # no .pull-* temp dir left behind

    found = json.loads(run_cr("find", "--json").stdout)
    alpha = next(c for c in found if c["ref"] == "model:alpha@1.0.0")
    assert alpha["repo"] == "team"
    assert Path(alpha["path"]) == clone / "model" / "alpha" / "1.0.0"
    assert alpha["tags"] == ["first"]
    assert {c["ref"] for c in found if c["repo"] == "team"} == {"model:alpha@1.0.0", "dataset:beta@1.0.0"}

    table = run_cr("find", "model")
    assert table.returncode == 0
    assert "model:alpha@1.0.0" in table.stdout and "team" in table.stdout

    listed = json.loads(run_cr("repo", "list", "--json").stdout)
    team = next(r for r in listed if r["name"] == "team")
    assert team["origin"] == "git"
    assert team["url"] == remote.url
    assert team["exists"] is True
    assert team["components"] == 2
    assert team["path"] == str(clone)
    # registered repos come before the shipped ones
    assert [r["name"] for r in listed].index("team") < [r["name"] for r in listed].index("builtin")

    [entry] = registry_entries(cr_home)
    assert entry["name"] == "team" and entry["origin"] == "git" and entry["url"] == remote.url
    assert "ref" not in entry


def test_pull_json_output_describes_the_repo(run_cr, remote, cr_home):
    done = run_cr("repo", "pull", remote.url, "--json", input="")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["name"] == "team"
    assert data["origin"] == "git"
    assert data["url"] == remote.url
    assert data["path"] == str(cr_home / "repos" / "team")


def test_pull_via_api(remote, cr_home):
    repo = api.repo_pull(remote.url)
    assert repo.name == "team"
    assert repo.origin == "git"
    assert repo.url == remote.url
    assert repo.ref is None
    assert repo.path == cr_home / "repos" / "team"
    assert head_of(repo.path) == remote.first
    assert {c.ref for c in api.find(repo="team")} == {"model:alpha@1.0.0", "dataset:beta@1.0.0"}
    assert api.resolve("model:alpha").repo == "team"
    assert [r.name for r in registry.registered()] == ["team"]
    assert leftovers(cr_home) == ["team"]


def test_pull_accepts_a_plain_path(remote, cr_home):
    repo = api.repo_pull(str(remote.bare))
    assert repo.name == "team"
    assert {c.ref for c in api.find(repo="team")} == {"model:alpha@1.0.0", "dataset:beta@1.0.0"}


@pytest.fixture
def two_versions(remote):
    """remote with tag v1 on the first commit and a second commit adding model:alpha@2.0.0."""
    remote.tag("v1")
    remote.component("model", "alpha", "2.0.0")
    remote.second = remote.commit("second")
    return remote


def test_pull_ref_tag_checks_out_the_tag(run_cr, two_versions, cr_home):
    done = run_cr("repo", "pull", two_versions.url, "--ref", "v1", input="")
    assert done.returncode == 0, done.stderr
    assert head_of(cr_home / "repos" / "team") == two_versions.first
    assert api_refs("team") == {"model:alpha@1.0.0", "dataset:beta@1.0.0"}
    [entry] = registry_entries(cr_home)
    assert entry["ref"] == "v1"


def test_pull_without_ref_gets_the_default_branch_head(two_versions, cr_home):
    api.repo_pull(two_versions.url)
    assert head_of(cr_home / "repos" / "team") == two_versions.second
    assert "model:alpha@2.0.0" in api_refs("team")


def test_pull_ref_commit_checks_out_that_commit(run_cr, two_versions, cr_home):
    done = run_cr("repo", "pull", two_versions.url, "--ref", two_versions.first, input="")
    assert done.returncode == 0, done.stderr
    assert head_of(cr_home / "repos" / "team") == two_versions.first
    assert api_refs("team") == {"model:alpha@1.0.0", "dataset:beta@1.0.0"}
    assert registry_entries(cr_home)[0]["ref"] == two_versions.first


def test_pull_ref_short_commit_via_api(two_versions, cr_home):
    repo = api.repo_pull(two_versions.url, ref=two_versions.first[:10])
    assert head_of(repo.path) == two_versions.first
    assert api_refs("team") == {"model:alpha@1.0.0", "dataset:beta@1.0.0"}


def test_pull_ref_branch_checks_out_the_branch(run_cr, remote, cr_home):
    remote.component("solution", "gamma", "0.1.0")
    dev = remote.commit("on dev", branch="dev")
    git("reset", "--quiet", "--hard", remote.first, cwd=remote.work)
    remote.component("platform", "delta")
    main = remote.commit("on main")
    assert dev != main

    repo = api.repo_pull(remote.url, ref="dev")
    assert repo.ref == "dev"
    assert head_of(repo.path) == dev
    refs = {c.ref for c in api.find(repo="team")}
    assert "solution:gamma@0.1.0" in refs and "platform:delta@1.0.0" not in refs


# -- updating --------------------------------------------------------------------------

def test_update_picks_up_a_new_commit(run_cr, remote, cr_home):
    api.repo_pull(remote.url)
    remote.component("model", "alpha", "1.1.0")
    second = remote.commit("second")

    done = run_cr("repo", "update", input="")
    assert done.returncode == 0, done.stderr
    assert f"team: {remote.first[:12]} -> {second[:12]}" in done.stdout
    assert head_of(cr_home / "repos" / "team") == second
    assert "model:alpha@1.1.0" in api_refs("team")
    # the newest version now wins
    assert api.show("model:alpha")["version"] == "1.1.0"


def test_update_reports_up_to_date_when_nothing_changed(run_cr, remote, cr_home):
    api.repo_pull(remote.url)
    done = run_cr("repo", "update", "team", input="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"team: up to date at {remote.first[:12]}"

    as_json = run_cr("repo", "update", "--json", input="")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == [{"name": "team", "old": remote.first, "new": remote.first, "changed": False}]


def test_update_via_api_removes_deleted_components(remote, cr_home):
    api.repo_pull(remote.url)
    shutil.rmtree(remote.work / "dataset")
    second = remote.commit("drop beta")
    [result] = api.repo_update("team")
    assert result == {"name": "team", "old": remote.first, "new": second, "changed": True}
    assert {c.ref for c in api.find(repo="team")} == {"model:alpha@1.0.0"}


def test_update_keeps_a_pinned_tag(remote, cr_home):
    remote.tag("v1")
    api.repo_pull(remote.url, ref="v1")
    remote.component("model", "alpha", "2.0.0")
    remote.commit("second")
    [result] = api.repo_update()
    assert result["changed"] is False and result["new"] == remote.first
    assert {c.version for c in api.find("model", repo="team")} == {"1.0.0"}
    # moving the tag on the server moves the clone on the next update
    remote.tag("v1", force=True)
    [result] = api.repo_update("team")
    assert result["changed"] is True
    assert {c.version for c in api.find("model", repo="team")} == {"1.0.0", "2.0.0"}
    assert registry_entries(cr_home)[0]["ref"] == "v1"


def test_update_without_git_repos_says_so(run_cr):
    done = run_cr("repo", "update", input="")
    assert done.returncode == 0
    assert "no git repositories registered" in done.stderr


def test_update_of_unknown_repo_is_an_error(run_cr, remote):
    api.repo_pull(remote.url)
    assert_user_error(run_cr("repo", "update", "nope", input=""), "'nope'")


def test_update_when_the_remote_is_gone_is_a_clean_error(run_cr, remote, cr_home):
    api.repo_pull(remote.url)
    before = registry_file(cr_home).read_bytes()
    shutil.rmtree(remote.bare)
    done = run_cr("repo", "update", input="", timeout=60)
    assert_user_error(done, remote.url)
    assert registry_file(cr_home).read_bytes() == before
    assert head_of(cr_home / "repos" / "team") == remote.first


def test_update_refuses_a_repo_that_renamed_itself(run_cr, remote, cr_home):
    api.repo_pull(remote.url)
    make_repo(remote.work, "renamed")
    remote.commit("rename")
    assert_user_error(run_cr("repo", "update", input=""), "'renamed'", "'team'")
    assert [e["name"] for e in registry_entries(cr_home)] == ["team"]


# -- removing --------------------------------------------------------------------------

def test_rm_unregisters_and_deletes_the_clone(run_cr, remote, cr_home):
    assert run_cr("repo", "pull", remote.url, input="").returncode == 0
    assert "model:alpha@1.0.0" in api_refs()
    assert (cr_home / "repos" / "team" / "cr-repo.json").is_file()

    done = run_cr("repo", "rm", "team")
    assert done.returncode == 0, done.stderr
    assert "removed team" in done.stdout
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []
    assert not api_refs() & {"model:alpha@1.0.0", "dataset:beta@1.0.0"}
    assert "team" not in {r["name"] for r in api.repo_list()}
    assert remote.bare.is_dir()  # the server side is never touched

    # and it can be pulled again afterwards
    api.repo_pull(remote.url)
    assert "model:alpha@1.0.0" in api_refs("team")


def test_rm_of_a_directory_repo_keeps_the_directory(run_cr, tmp_path, cr_home):
    mine = make_repo(tmp_path / "mine", "mine")
    meta = make_component(mine, "model", "own")
    api.repo_add(mine)
    assert "model:own@1.0.0" in api_refs()
    done = run_cr("repo", "rm", "mine")
    assert done.returncode == 0, done.stderr
    assert meta.is_file() and (mine / "cr-repo.json").is_file()
    assert registry_entries(cr_home) == []
    assert "model:own@1.0.0" not in api_refs()


def test_rm_via_api_only_removes_the_named_repo(remote, tmp_path, cr_home):
    api.repo_pull(remote.url)
    other = api.repo_add(make_repo(tmp_path / "other", "other"))
    removed = api.repo_rm("team")
    assert removed.name == "team"
    assert [e["name"] for e in registry_entries(cr_home)] == ["other"]
    assert not (cr_home / "repos" / "team").exists()
    assert other.path.is_dir()


# -- bad input -------------------------------------------------------------------------

def _run_noninteractive(run_cr, *args, **kw):
    """The CLI with empty stdin and a timeout: a password prompt would hang or fail the test."""
    return run_cr(*args, input="", timeout=60, **kw)


def test_pull_of_a_url_that_does_not_exist(run_cr, cr_home):
    done = _run_noninteractive(run_cr, "repo", "pull", "file:///nonexistent")
    lines = assert_user_error(done, "file:///nonexistent")
    for word in ("Username", "Password", "password"):
        assert word not in done.stderr
    assert done.stdout == ""
    assert len([ln for ln in lines if ln.startswith("Hint:")]) == 1
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []


def test_pull_of_an_unreachable_https_url_fails_fast(run_cr, cr_home):
    done = _run_noninteractive(run_cr, "repo", "pull", "https://127.0.0.1:1/nothing.git")
    assert_user_error(done, "https://127.0.0.1:1/nothing.git")
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []


class _AuthRequired(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        self.server.hits += 1
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="reefkit tests"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def auth_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthRequired)
    server.hits = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_pull_from_a_server_that_wants_a_password_never_prompts(run_cr, auth_server, tmp_path, cr_home):
    # An askpass program inherited from the user's environment must not be run either:
    # cr makes git non-interactive. If it ran, it would leave a marker and 'succeed'.
    marker = tmp_path / "askpass-ran"
    askpass = tmp_path / "askpass.sh"
    askpass.write_text(f"#!/bin/sh\necho asked >> {marker}\necho secret\n")
    askpass.chmod(0o755)
    url = f"http://127.0.0.1:{auth_server.server_port}/private.git"
    done = run_cr(
        "repo", "pull", url, input="", timeout=60,
        env={"GIT_ASKPASS": str(askpass), "SSH_ASKPASS": str(askpass), "GIT_TERMINAL_PROMPT": "1"},
    )
    assert auth_server.hits >= 1  # git really asked the server
    assert_user_error(done, url)
    assert not marker.exists(), "git ran an askpass program: it would have prompted for a password"
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []


def test_pull_of_a_revision_that_does_not_exist(run_cr, remote, cr_home):
    done = _run_noninteractive(run_cr, "repo", "pull", remote.url, "--ref", "no-such-rev")
    assert_user_error(done, "'no-such-rev'", remote.url)
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []


def test_pull_of_a_git_repo_without_cr_repo_json_is_refused(run_cr, tmp_path, cr_home):
    plain = Remote(tmp_path / "server", name=None)
    make_component(plain.work, "model", "stray")
    plain.commit("no cr-repo.json here")
    done = _run_noninteractive(run_cr, "repo", "pull", plain.url)
    assert_user_error(done, plain.url, "cr-repo.json")
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []
    assert "model:stray@1.0.0" not in api_refs()


def test_pull_of_a_revision_without_cr_repo_json_is_refused(tmp_path, cr_home):
    plain = Remote(tmp_path / "server", name=None)
    make_component(plain.work, "model", "stray")
    early = plain.commit("before it was a repository")
    make_repo(plain.work, "late")
    plain.commit("now it is one")
    with pytest.raises(RepoError) as err:
        api.repo_pull(plain.url, ref=early)
    assert "cr-repo.json" in err.value.message and err.value.hint
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []
    # the tip of the branch is a repository and is accepted
    assert api.repo_pull(plain.url).name == "late"


def test_pull_of_a_repo_with_broken_cr_repo_json_is_refused(run_cr, tmp_path, cr_home):
    broken = Remote(tmp_path / "server", name=None)
    (broken.work / "cr-repo.json").write_text('{"name": "broken",,}')
    broken.commit("broken")
    done = _run_noninteractive(run_cr, "repo", "pull", broken.url)
    assert_user_error(done, "cr-repo.json")
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []


@pytest.mark.parametrize("name", ["builtin", "local"])
def test_pull_of_a_repo_with_a_reserved_name_leaves_nothing(name, tmp_path, cr_home):
    r = Remote(tmp_path / "server", name=name)
    r.commit("reserved")
    with pytest.raises(RepoError) as err:
        api.repo_pull(r.url)
    assert "reserved" in err.value.message
    assert registry_entries(cr_home) == []
    assert leftovers(cr_home) == []


def test_pulling_the_same_repo_twice_is_refused(run_cr, remote, cr_home):
    api.repo_pull(remote.url)
    before = registry_file(cr_home).read_bytes()
    done = _run_noninteractive(run_cr, "repo", "pull", remote.url)
    assert_user_error(done, "'team'")
    assert "cr repo update team" in done.stderr
    assert registry_file(cr_home).read_bytes() == before
    assert leftovers(cr_home) == ["team"]


def test_pull_of_a_name_already_registered_as_a_directory_is_refused(remote, tmp_path, cr_home):
    api.repo_add(make_repo(tmp_path / "dir-team", "team"))
    with pytest.raises(RepoError) as err:
        api.repo_pull(remote.url)
    assert "already registered" in err.value.message
    assert [e["origin"] for e in registry_entries(cr_home)] == ["dir"]
    assert leftovers(cr_home) == []


def test_repo_add_registers_a_directory(run_cr, tmp_path, cr_home):
    mine = make_repo(tmp_path / "mine", "mine")
    make_component(mine, "dataset", "owned")
    done = run_cr("repo", "add", str(mine), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["name"] == "mine" and data["origin"] == "dir" and data["path"] == str(mine)
    assert api_refs("mine") == {"dataset:owned@1.0.0"}


def test_repo_add_of_a_relative_path_records_an_absolute_one(run_cr, tmp_path, cr_home):
    make_repo(tmp_path / "rel", "rel")
    done = run_cr("repo", "add", "rel", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [entry] = registry_entries(cr_home)
    assert entry["path"] == str(tmp_path / "rel")


def test_repo_add_of_a_directory_without_cr_repo_json(run_cr, tmp_path, cr_home):
    bare_dir = tmp_path / "not-a-repo"
    make_component(bare_dir, "model", "loose")
    done = run_cr("repo", "add", str(bare_dir))
    lines = assert_user_error(done, str(bare_dir), "cr-repo.json")
    assert any("cr repo init" in ln for ln in lines if ln.startswith("Hint:"))
    assert registry_entries(cr_home) == []


def test_repo_add_of_a_path_that_does_not_exist(run_cr, tmp_path, cr_home):
    missing = tmp_path / "missing"
    done = run_cr("repo", "add", str(missing))
    assert_user_error(done, str(missing))
    assert registry_entries(cr_home) == []
    assert not missing.exists()


def test_repo_add_with_an_invalid_cr_repo_json(run_cr, tmp_path, cr_home):
    bad = tmp_path / "bad"
    write_json(bad / "cr-repo.json", {"name": "Bad Name!", "uid": "xyz", "version": "1.0.0"})
    done = run_cr("repo", "add", str(bad))
    assert_user_error(done, "cr-repo.json")
    assert registry_entries(cr_home) == []


def test_registering_the_same_name_twice(run_cr, tmp_path, cr_home):
    first = make_repo(tmp_path / "one", "same")
    second = make_repo(tmp_path / "two", "same")
    api.repo_add(first)
    done = run_cr("repo", "add", str(second))
    lines = assert_user_error(done, "'same'", str(first))
    assert any("cr repo rm same" in ln for ln in lines)
    assert [e["path"] for e in registry_entries(cr_home)] == [str(first)]


def test_registering_the_same_path_twice(run_cr, tmp_path, cr_home):
    mine = make_repo(tmp_path / "mine", "mine")
    api.repo_add(mine)
    done = run_cr("repo", "add", str(mine))
    assert done.returncode == 1
    assert "already registered" in done.stderr and "Traceback" not in done.stderr
    assert len(registry_entries(cr_home)) == 1


@pytest.mark.parametrize("name", ["builtin", "local", "builtin-recipes"])
def test_repo_add_of_a_reserved_name(run_cr, tmp_path, cr_home, name):
    done = run_cr("repo", "add", str(make_repo(tmp_path / "x", name)))
    assert_user_error(done, repr(name))
    assert registry_entries(cr_home) == []


def test_repo_rm_of_an_unknown_repo(run_cr, tmp_path, cr_home):
    api.repo_add(make_repo(tmp_path / "mine", "mine"))
    before = registry_file(cr_home).read_bytes()
    done = run_cr("repo", "rm", "nope")
    lines = assert_user_error(done, "'nope'")
    assert any("mine" in ln for ln in lines if ln.startswith("Hint:"))  # lists what exists
    assert registry_file(cr_home).read_bytes() == before


@pytest.mark.parametrize("name", ["builtin", "local"])
def test_repo_rm_of_a_builtin_repo(run_cr, name, cr_home):
    api.new("model", "kept")  # creates the local repo
    done = run_cr("repo", "rm", name)
    assert done.returncode == 1
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and repr(name) in errors[0]
    assert "Traceback" not in done.stderr
    assert {"model:kept@0.1.0", "model:iris-logreg@1.0.0"} <= api_refs()
    assert (cr_home / "local" / "cr-repo.json").is_file()


@pytest.mark.parametrize("name", ["builtin-actions", "builtin-recipes", "local"])
def test_repo_rm_of_a_builtin_repo_via_api(name):
    with pytest.raises(RepoError) as err:
        api.repo_rm(name)
    assert repr(name) in err.value.message
    assert name in {r["name"] for r in api.repo_list()} or name == "local"


@pytest.fixture
def blocker(tmp_path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("not a directory\n")
    return f


@pytest.mark.parametrize("command", [
    ("repo", "add", "{repo}"),
    ("repo", "pull", "{url}"),
    ("repo", "init", "{tmp}/fresh", "--name", "fresh"),
    ("new", "model", "mine"),
    ("repo", "rm", "whatever"),
], ids=["add", "pull", "init", "new", "rm"])
def test_unwritable_cr_home_is_a_clear_error(run_cr, remote, tmp_path, blocker, command):
    _assert_unwritable(run_cr, remote, tmp_path, blocker, blocker, command)


def test_cr_home_under_a_file_is_a_clear_error(run_cr, remote, tmp_path, blocker):
    _assert_unwritable(run_cr, remote, tmp_path, blocker, blocker / "home", ("new", "model", "mine"))


def _assert_unwritable(run_cr, remote, tmp_path, blocker, home, command):
    repo = make_repo(tmp_path / "mine", "mine")
    args = [a.format(repo=repo, url=remote.url, tmp=tmp_path) for a in command]
    done = run_cr(*args, env={"CR_HOME": str(home)}, input="")
    assert_user_error(done, str(home))
    assert "CR_HOME" in done.stderr
    assert blocker.read_text() == "not a directory\n"


@pytest.mark.parametrize("command", [("find",), ("show", "model:iris-logreg"), ("repo", "list")])
def test_unusable_cr_home_when_reading_is_a_clear_error(run_cr, blocker, command):
    done = run_cr(*command, env={"CR_HOME": str(blocker)})
    assert done.returncode == 1, done.stdout
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and str(blocker) in errors[0]
    assert "Traceback" not in done.stderr


# -- repos.json integrity ------------------------------------------------------------

def test_repos_json_stays_valid_after_every_operation(remote, tmp_path, cr_home):
    steps = []

    def snapshot(label):
        steps.append((label, [e["name"] for e in registry_entries(cr_home)]))

    api.repo_add(make_repo(tmp_path / "a", "a"))
    snapshot("add a")
    api.repo_init(tmp_path / "b", "b")
    snapshot("init b")
    api.repo_pull(remote.url)
    snapshot("pull team")
    remote.component("model", "alpha", "3.0.0")
    remote.commit("third")
    api.repo_update()
    snapshot("update")
    with pytest.raises(CRError):
        api.repo_add(make_repo(tmp_path / "a2", "a"))
    snapshot("failed add")
    with pytest.raises(CRError):
        api.repo_rm("nope")
    snapshot("failed rm")
    api.repo_rm("a")
    snapshot("rm a")
    api.new("model", "made-here")
    snapshot("new")
    assert steps == [
        ("add a", ["a"]),
        ("init b", ["a", "b"]),
        ("pull team", ["a", "b", "team"]),
        ("update", ["a", "b", "team"]),
        ("failed add", ["a", "b", "team"]),
        ("failed rm", ["a", "b", "team"]),
        ("rm a", ["b", "team"]),
        ("new", ["b", "team"]),
    ]
    assert temp_files(cr_home) == []


def test_damaged_repos_json_is_reported_not_overwritten(run_cr, tmp_path, cr_home):
    cr_home.mkdir(parents=True)
    registry_file(cr_home).write_text('{"format": 1, "repos": [')
    for args in (("find",), ("repo", "add", str(make_repo(tmp_path / "m", "m")))):
        done = run_cr(*args)
        assert_user_error(done, "repos.json")
    assert registry_file(cr_home).read_text() == '{"format": 1, "repos": ['


@pytest.fixture
def one_registered(tmp_path, cr_home) -> bytes:
    api.repo_add(make_repo(tmp_path / "first", "first"))
    return registry_file(cr_home).read_bytes()


def _fail_for_registry(real, exc):
    def fake(*args, **kwargs):
        if any(str(a).endswith("repos.json") for a in args):
            raise exc
        return real(*args, **kwargs)

    return fake


def test_failed_replace_keeps_the_previous_repos_json(monkeypatch, tmp_path, cr_home, one_registered):
    # (monkeypatch.context, not monkeypatch.undo: undo would also drop the CR_HOME setting)
    with monkeypatch.context() as m:
        m.setattr(os, "replace", _fail_for_registry(os.replace, OSError(28, "No space left on device")))
        with pytest.raises((OSError, CRError)):
            api.repo_add(make_repo(tmp_path / "second", "second"))
    assert registry_file(cr_home).read_bytes() == one_registered
    assert temp_files(cr_home) == []
    api.repo_add(tmp_path / "second")
    assert [e["name"] for e in registry_entries(cr_home)] == ["first", "second"]


def test_failed_write_surfaces_as_a_store_error_naming_the_file(monkeypatch, tmp_path, cr_home, one_registered):
    monkeypatch.setattr(os, "replace", _fail_for_registry(os.replace, OSError(28, "No space left on device")))
    with pytest.raises(CRError) as err:
        api.repo_add(make_repo(tmp_path / "second", "second"))
    assert "repos.json" in err.value.message and "No space left" in err.value.message
    assert err.value.hint


def test_interrupt_during_fsync_keeps_the_previous_repos_json(monkeypatch, tmp_path, cr_home, one_registered):
    """A crash after the temp file is written but before it replaces repos.json."""

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.repo_add(make_repo(tmp_path / "second", "second"))
    assert registry_file(cr_home).read_bytes() == one_registered
    assert temp_files(cr_home) == []


def test_failing_serialisation_keeps_the_previous_repos_json(monkeypatch, tmp_path, cr_home, one_registered):
    def broken_dumps(*args, **kwargs):
        raise TypeError("cannot serialise")

    with monkeypatch.context() as m:
        m.setattr(fsutil.json, "dumps", broken_dumps)
        with pytest.raises(TypeError):
            api.repo_add(make_repo(tmp_path / "second", "second"))
    assert registry_file(cr_home).read_bytes() == one_registered
    assert temp_files(cr_home) == []


def test_first_write_that_fails_leaves_no_repos_json(monkeypatch, tmp_path, cr_home):
    with monkeypatch.context() as m:
        m.setattr(os, "replace", _fail_for_registry(os.replace, OSError(5, "Input/output error")))
        with pytest.raises((OSError, CRError)):
            api.repo_add(make_repo(tmp_path / "first", "first"))
    assert not registry_file(cr_home).exists()
    assert temp_files(cr_home) == []
    assert api.repo_list()[0]["name"] == "builtin"


def test_failed_registration_after_pull_leaves_no_clone(monkeypatch, remote, cr_home, one_registered):
    with monkeypatch.context() as m:
        m.setattr(os, "replace", _fail_for_registry(os.replace, OSError(28, "No space left on device")))
        with pytest.raises((OSError, CRError)):
            api.repo_pull(remote.url)
    assert registry_file(cr_home).read_bytes() == one_registered
    assert leftovers(cr_home) == []


def test_disk_full_through_the_cli_is_an_error_not_a_traceback(tmp_path, cr_home):
    """The real CLI, with os.replace failing for repos.json as on a full disk."""
    repo = make_repo(tmp_path / "mine", "mine")
    script = (
        "import os, sys\n"
        "real = os.replace\n"
        "def replace(src, dst, *a, **k):\n"
        "    if str(dst).endswith('repos.json'):\n"
        "        raise OSError(28, 'No space left on device')\n"
        "    return real(src, dst, *a, **k)\n"
        "os.replace = replace\n"
        "from cr.cli.main import main\n"
        "main(sys.argv[1:])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "repo", "add", str(repo)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "CR_HOME": str(cr_home)},
    )
    assert_user_error(done, "repos.json", "No space left on device")
    assert not registry_file(cr_home).exists()
    assert temp_files(cr_home) == []
