"""Installation: real pip installs into a temp CR_HOME, downloads from a local HTTP server,
scripts, apt without sudo, and every way an install can fail leaving nothing behind.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cr.errors import CRError, InvalidMeta, NotFound
from cr.events import CollectingReporter, set_reporter
from cr.software import download, envs, host
from cr.software.install import install

from helpers.recipes import recipe_repo
from helpers.install import SIX

# A recipe offering a version that does not exist on the index: pip fails mid-install.
SIX_MISSING = {**SIX, "name": "six-missing", "install": [{"method": "pip", "packages": ["six=={version}"], "versions": ["99.0.0"]}]}


def leftovers(home: Path) -> list[str]:
    """Anything an install left under CR_HOME/envs apart from locks."""
    root = home / "envs"
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.name.startswith(".lock-"))


def child_imports(module: str, pythonpath: str) -> dict:
    code = f"import json, {module} as m; print(json.dumps({{'file': m.__file__, 'version': getattr(m, '__version__', '')}}))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- pip --------------------------------------------------------------------------

def test_pip_install_into_a_prefix_then_import_it_from_a_child_process(tmp_path, cr_home):
    recipe_repo(tmp_path, SIX)
    env = install("six", "<2")
    assert (env.name, env.version, env.origin, env.source) == ("six", "1.17.0", "installed", "pip")
    assert env.prefix == str(cr_home / "envs" / "six" / env.id / "prefix")
    assert env.exports == {"PYTHONPATH": [env.prefix]}
    assert env.interpreter == host.canonical_interpreter(sys.executable)
    (pkg,) = env.packages
    assert (pkg["name"], pkg["version"]) == ("six", "1.17.0") and re.fullmatch(r"[0-9a-f]{64}", pkg["sha256"])
    got = child_imports("six", env.prefix)
    assert got["version"] == "1.17.0" and got["file"].startswith(env.prefix)
    assert [e.id for e in envs.list_envs("six")] == [env.id]
    assert not any(p.startswith(".tmp-") for p in leftovers(cr_home))
    # a second install of the same version is the same env, not a new one
    assert install("six", "==1.17.0").id == env.id


def test_pip_failure_registers_nothing_and_leaves_no_prefix(tmp_path, cr_home):
    recipe_repo(tmp_path, SIX_MISSING)
    with pytest.raises(CRError) as err:
        install("six-missing")
    assert "pip could not install six==99.0.0" in err.value.message
    assert "ERROR:" in err.value.message  # pip's own last lines
    assert "pip index versions six" in err.value.hint
    assert envs.list_envs("six-missing") == []
    assert leftovers(cr_home) == []


def test_interrupted_install_leaves_nothing_and_stale_temp_dirs_are_swept(tmp_path, cr_home, monkeypatch):
    recipe_repo(tmp_path, SIX, SIX_MISSING)
    import cr.software.install as inst

    def interrupted(recipe, method, version, interp, stage, offline):
        (stage / "prefix").mkdir()
        (stage / "prefix" / "half.py").write_text("")
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(inst, "_run_pip", interrupted)
        with pytest.raises(KeyboardInterrupt):
            install("six")
    assert envs.list_envs("six") == [] and leftovers(cr_home) == []
    # a temp dir of an install that was killed (its pid is gone) is removed by the next one
    dead = cr_home / "envs" / ".tmp-six-999999999-abc123"
    (dead / "prefix").mkdir(parents=True)
    with pytest.raises(CRError, match="pip could not install"):
        install("six-missing")
    assert not dead.exists()


def test_offline_refuses_pip_and_says_what_is_missing(tmp_path, cr_home):
    recipe_repo(tmp_path, SIX)
    with pytest.raises(CRError, match=r"offline: installing six 1\.17\.0 needs pip to download six==1\.17\.0"):
        install("six", offline=True)
    assert leftovers(cr_home) == []


def test_unknown_software_and_a_spec_nothing_satisfies(tmp_path):
    recipe_repo(tmp_path, SIX)
    with pytest.raises(NotFound, match="unknown software 'nosuch'"):
        install("nosuch")
    with pytest.raises(CRError) as err:
        install("six", ">=100")
    assert "versions offered here: 1.17.0, 1.16.0" in err.value.message


def test_invalid_recipe_is_reported_with_its_file_and_field(tmp_path):
    repo = recipe_repo(
        tmp_path,
        {**SIX, "name": "badmarker", "install": [{"method": "pip", "marker": "platform_machine === 'x'", "packages": ["six=={version}"], "versions": ["1.17.0"]}]},
        {"name": "badmethod", "install": [{"method": "conda", "packages": ["six=={version}"], "versions": ["1.17.0"]}]},
        {"name": "badsyntax", "install": [{"method": "pip", "marker": "platform_machine =! 'x'", "packages": ["six=={version}"], "versions": ["1.17.0"]}]},
    )
    # parses, but cannot be evaluated ('===' on versions): found when the methods are chosen
    with pytest.raises(InvalidMeta) as err:
        install("badmarker")
    assert str(repo / "badmarker" / "recipe.json") in err.value.message
    assert "/install/0/marker" in err.value.message and "PEP 508" in err.value.hint
    # does not parse: the schema refuses the recipe, and install says why instead of "unknown"
    with pytest.raises(InvalidMeta) as err:
        install("badsyntax")
    assert str(repo / "badsyntax" / "recipe.json") in err.value.message
    assert "/install/0/marker: expected a PEP 508 marker" in err.value.message
    with pytest.raises(InvalidMeta) as err:
        install("badmethod")
    assert str(repo / "badmethod" / "recipe.json") in err.value.message
    assert '/install/0/method: expected one of "pip", "apt", "download", "script", found "conda"' in err.value.message


def test_a_marker_that_cannot_be_evaluated_names_the_recipe_and_field():
    from cr.software.recipe import Recipe

    # built without schema validation, as a recipe from an old index could be
    r = Recipe.from_meta({"uid": "0" * 16, "name": "x", "version": "1.0.0", "install": [
        {"method": "pip", "packages": [], "versions": ["1"]},
        {"method": "pip", "marker": "platform_machine ===", "packages": [], "versions": ["1"]}]}, "/r/x/recipe.json")
    with pytest.raises(InvalidMeta, match=r"/r/x/recipe.json: /install/1/marker"):
        r.methods_for({"python_version": "3.11"}, frozenset())


def test_capability_gated_methods(tmp_path, monkeypatch):
    gpu_only = {
        "name": "gpuonly",
        "install": [
            {"method": "pip", "packages": ["six-gpu=={version}"], "versions": ["2.0.0"], "requires": ["nvidia-gpu", "cuda"]},
            {"method": "pip", "packages": ["six=={version}"], "versions": ["1.17.0"], "requires": ["!cuda"]},
        ],
    }
    recipe_repo(tmp_path, gpu_only, {"name": "needscuda", "install": [gpu_only["install"][0]]})
    monkeypatch.setattr(host, "capabilities", lambda platform=None: frozenset({"linux", "x86_64"}))
    with pytest.raises(CRError) as err:
        install("needscuda")
    assert "cannot be installed on this platform" in err.value.message and "needs nvidia-gpu, cuda" in err.value.hint
    with pytest.raises(CRError, match="six==1.17.0"):
        install("gpuonly", offline=True)
    monkeypatch.setattr(host, "capabilities", lambda platform=None: frozenset({"linux", "x86_64", "nvidia-gpu", "cuda"}))
    with pytest.raises(CRError, match="six-gpu==2.0.0"):
        install("gpuonly", offline=True)


# -- downloads -------------------------------------------------------------------------

class _Files(BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    ranges: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = 0
        rng = self.headers.get("Range")
        if rng:
            self.ranges.append(rng)
            start = int(re.match(r"bytes=(\d+)-", rng).group(1))
            if start >= len(data):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    handler = type("Files", (_Files,), {"files": {}, "ranges": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def tar_gz(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return buf.getvalue()


TOOL = tar_gz({"crtool-1.0/bin/crtool": b"#!/bin/sh\necho crtool 1.0\n" + b"#" * 200_000, "crtool-1.0/share/README": b"hi\n"})
TOOL_SHA = hashlib.sha256(TOOL).hexdigest()


def download_recipe(url: str, sha: str = TOOL_SHA, name: str = "crtool", archive_name: str = "crtool-{version}.tar.gz") -> dict:
    return {
        "name": name,
        "detect": [{"type": "executable", "names": ["crtool"], "regex": "crtool (\\S+)"}],
        "install": [{"method": "download", "url": f"{url}/{archive_name}", "sha256": {"1.0": sha}, "versions": ["1.0"], "strip_components": 1}],
    }


def test_download_extract_and_register(tmp_path, cr_home, server):
    handler, url = server
    handler.files["/crtool-1.0.tar.gz"] = TOOL
    recipe_repo(tmp_path, download_recipe(url))
    env = install("crtool")
    prefix = Path(env.prefix)
    assert (prefix / "bin" / "crtool").read_bytes().startswith(b"#!/bin/sh")
    assert os.access(prefix / "bin" / "crtool", os.X_OK)
    assert env.exports == {"PATH": [str(prefix / "bin")]}
    assert (env.source, env.version) == ("download", "1.0")
    cached = download.cached_path(f"{url}/crtool-1.0.tar.gz", TOOL_SHA)
    assert cached.is_file()
    # offline now works from the cache, without the server
    envs.remove(env)
    handler.files.clear()
    assert install("crtool", offline=True).version == "1.0"


def test_download_sha256_mismatch_discards_the_file(tmp_path, cr_home, server):
    handler, url = server
    handler.files["/crtool-1.0.tar.gz"] = TOOL
    recipe_repo(tmp_path, download_recipe(url, sha="0" * 64))
    with pytest.raises(CRError) as err:
        install("crtool")
    assert "sha256 mismatch" in err.value.message and TOOL_SHA in err.value.message and "discarded" in err.value.message
    assert list(download.cache_dir().iterdir()) == []
    assert envs.list_envs("crtool") == [] and leftovers(cr_home) == []


def test_download_resumes_a_partial_file_with_a_range_request(tmp_path, cr_home, server):
    handler, url = server
    handler.files["/crtool-1.0.tar.gz"] = TOOL
    recipe_repo(tmp_path, download_recipe(url))
    part = download.cached_path(f"{url}/crtool-1.0.tar.gz", TOOL_SHA)
    part = part.with_name(part.name + ".part")
    part.parent.mkdir(parents=True)
    half = len(TOOL) // 2
    part.write_bytes(TOOL[:half])
    rep = CollectingReporter()
    set_reporter(rep)
    env = install("crtool")
    assert handler.ranges == [f"bytes={half}-"]
    assert any("resuming" in i for i in rep.infos)
    assert (Path(env.prefix) / "bin" / "crtool").is_file()
    assert not part.exists()


def test_offline_download_not_in_cache_names_url_and_where_to_put_it(tmp_path, cr_home, server):
    handler, url = server
    recipe_repo(tmp_path, download_recipe(url))
    with pytest.raises(CRError) as err:
        install("crtool", offline=True)
    assert f"{url}/crtool-1.0.tar.gz" in err.value.message and str(download.cache_dir()) in err.value.hint
    assert leftovers(cr_home) == []


@pytest.mark.parametrize("evil", [
    {"members": {"../evil.txt": b"x"}},
    {"members": {"/tmp/evil.txt": b"x"}},
    {"members": {"ok/a.txt": b"x"}, "links": {"ok/link": "/etc/passwd"}},
], ids=["dotdot", "absolute", "symlink"])
def test_unsafe_tar_members_are_refused(tmp_path, cr_home, server, evil):
    handler, url = server
    data = tar_gz(evil["members"], evil.get("links"))
    handler.files["/crtool-1.0.tar.gz"] = data
    recipe_repo(tmp_path, download_recipe(url, sha=hashlib.sha256(data).hexdigest()))
    with pytest.raises(CRError, match="refused to extract"):
        install("crtool")
    assert envs.list_envs("crtool") == [] and leftovers(cr_home) == []
    assert not (cr_home / "envs" / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()


def test_unsafe_zip_members_are_refused(tmp_path):
    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../escape.txt", "x")
    with pytest.raises(CRError, match="outside the target"):
        download.extract(archive, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("pkg/lib/a.txt", "fine")
    download.extract(good, tmp_path / "out2", strip_components=1)
    assert (tmp_path / "out2" / "lib" / "a.txt").read_text() == "fine"


# -- script --------------------------------------------------------------------------

def test_script_method_gets_prefix_and_version(tmp_path, cr_home):
    recipe_repo(tmp_path, {
        "name": "scripted",
        "install": [{"method": "script", "versions": ["0.3.0"],
                     "script": 'mkdir -p "$PREFIX/bin"\nprintf "#!/bin/sh\\necho scripted $VERSION\\n" > "$PREFIX/bin/scripted"\nchmod +x "$PREFIX/bin/scripted"'}],
        "env": {"SCRIPTED_HOME": "{prefix}"},
    })
    env = install("scripted")
    out = subprocess.run([str(Path(env.prefix) / "bin" / "scripted")], capture_output=True, text=True).stdout
    assert out.strip() == "scripted 0.3.0"
    assert env.exports == {"PATH": [env.prefix + "/bin"], "SCRIPTED_HOME": env.prefix}


def test_failing_script_registers_nothing(tmp_path, cr_home):
    recipe_repo(tmp_path, {"name": "broken", "install": [{"method": "script", "versions": ["1.0"], "script": 'touch "$PREFIX/partial"\necho "configure: error: no compiler" >&2\nexit 3'}]})
    with pytest.raises(CRError) as err:
        install("broken")
    assert "exit 3" in err.value.message and "no compiler" in err.value.message
    assert envs.list_envs("broken") == [] and leftovers(cr_home) == []


# -- apt: never sudo ---------------------------------------------------------------------

def _spy_bin(tmp_path: Path, monkeypatch, apt_body: str = "") -> Path:
    """Fake sudo and apt-get first on PATH; each records that it ran."""
    bindir = tmp_path / "spybin"
    bindir.mkdir()
    calls = tmp_path / "calls.log"
    for name, body in (("sudo", ""), ("apt-get", apt_body)):
        (bindir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\n{body}\n')
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return calls


APT_TOOL = {
    "name": "crapttool",
    "detect": [{"type": "executable", "names": ["crapttool"], "regex": "crapttool (\\S+)"}],
    "install": [{"method": "apt", "packages": ["crapttool"], "versions": ["4.2.0"]}],
}


def test_apt_as_non_root_says_which_command_to_run_and_never_prompts(tmp_path, cr_home, monkeypatch):
    calls = _spy_bin(tmp_path, monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    recipe_repo(tmp_path, APT_TOOL)
    with pytest.raises(CRError) as err:
        install("crapttool")
    assert "needs root" in err.value.message
    assert "`sudo apt-get install -y --no-install-recommends crapttool`" in err.value.message
    assert "cr detect software crapttool" in err.value.hint
    assert not calls.exists()  # neither sudo nor apt-get ran
    assert envs.list_envs("crapttool") == []


def test_apt_as_root_installs_then_detects(tmp_path, cr_home, monkeypatch):
    tool_dir = tmp_path / "installed"
    tool_dir.mkdir()
    monkeypatch.setenv("PATH", f"{tool_dir}{os.pathsep}{os.environ['PATH']}")
    calls = _spy_bin(tmp_path, monkeypatch, apt_body=f"printf '#!/bin/sh\\necho crapttool 4.2.0\\n' > {tool_dir}/crapttool; chmod +x {tool_dir}/crapttool")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    recipe_repo(tmp_path, APT_TOOL)
    env = install("crapttool")
    assert (env.version, env.source, env.location) == ("4.2.0", "apt", str(tool_dir / "crapttool"))
    assert calls.read_text().splitlines() == ["apt-get install -y --no-install-recommends crapttool"]


def test_apt_software_already_present_is_returned_without_running_apt(tmp_path, cr_home, monkeypatch):
    calls = _spy_bin(tmp_path, monkeypatch)
    from helpers.recipes import fake_exe

    tool = fake_exe(tmp_path / "have", "crapttool", "crapttool 4.1.0\n")
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    recipe_repo(tmp_path, APT_TOOL)
    env = install("crapttool", ">=4")
    assert (env.version, env.origin, env.location) == ("4.1.0", "detected", str(tool))
    assert not calls.exists()


# -- the CLI ---------------------------------------------------------------------------

def test_cli_install_env_list_show_rm(tmp_path, cr_home, run_cr):
    recipe_repo(tmp_path, SIX)
    done = run_cr("install", "software", "six@1.17.0", "--json")
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout)
    assert env["version"] == "1.17.0" and env["origin"] == "installed"
    listed = json.loads(run_cr("env", "list", "--json").stdout)
    assert [e["id"] for e in listed if e["name"] == "six"] == [env["id"]]
    shown = run_cr("env", "show", "six", "1.17.0")
    assert shown.returncode == 0 and "package:     six==1.17.0" in shown.stdout
    assert json.loads(run_cr("env", "show", "six", env["id"], "--json").stdout)["prefix"] == env["prefix"]
    rm = run_cr("env", "rm", "six", env["id"])
    assert rm.returncode == 0, rm.stderr
    assert not Path(env["prefix"]).exists()
    again = run_cr("env", "show", "six")
    assert again.returncode == 1 and again.stderr.startswith("Error: no software env six")


@pytest.mark.parametrize("args,needle", [
    (("install", "software", "nosuch"), "unknown software 'nosuch'"),
    (("install", "software", "six@>=100"), "versions offered here: 1.17.0, 1.16.0"),
    (("install", "six", "--offline"), "offline"),
    (("install", "model", "six"), "no component model:six"),
])
def test_cli_install_errors_are_one_line_and_a_hint(tmp_path, run_cr, args, needle):
    recipe_repo(tmp_path, SIX)
    done = run_cr(*args)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("Error: ")]
    assert len(errors) == 1 and needle in errors[0], done.stderr
    assert lines[lines.index(errors[0]) + 1].startswith("Hint: ")
    assert "Traceback" not in done.stderr


# -- a real framework, once ---------------------------------------------------------------

@pytest.mark.slow
def test_install_onnx_and_use_it_from_a_child_process(cr_home):
    env = install("onnx", "==1.23.1")
    names = {p["name"].lower() for p in env.packages}
    assert {"onnx", "protobuf"} <= names
    # numpy is software of its own (a dep of the onnx recipe): the lock provides it, not the prefix
    assert "numpy" not in names and not (Path(env.prefix) / "numpy").exists()
    assert all(re.fullmatch(r"[0-9a-f]{64}", p["sha256"]) for p in env.packages)
    code = ("import onnx, onnx.helper as h, json; "
            "n = h.make_node('Relu', ['x'], ['y']); "
            "g = h.make_graph([n], 'g', [h.make_tensor_value_info('x', 1, [2])], [h.make_tensor_value_info('y', 1, [2])]); "
            "onnx.checker.check_model(h.make_model(g)); print(json.dumps([onnx.__version__, onnx.__file__]))")
    envv = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    envv["PYTHONPATH"] = os.pathsep.join(env.exports["PYTHONPATH"])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=envv, cwd="/")
    assert done.returncode == 0, done.stderr
    version, path = json.loads(done.stdout)
    assert version == "1.23.1" and path.startswith(env.prefix)


@pytest.mark.slow
def test_install_software_also_installs_what_it_needs_so_env_exec_works(tmp_path, cr_home, run_cr):
    """`cr install software X` on an interpreter without X's dependencies installs those too (pip
    leaves a lock-provided dependency out of X's prefix), so `cr env exec software:X` runs at once
    instead of asking for `cr install software DEP` first."""
    dateutil = {"name": "python-dateutil",
                "detect": [{"type": "python", "module": "dateutil", "distribution": "python-dateutil", "attribute": "__version__"}],
                "install": [{"method": "pip", "packages": ["python-dateutil=={version}"], "versions": ["2.9.0.post0"]}],
                "deps": ["software:six@>=1.5"]}
    recipe_repo(tmp_path, SIX, dateutil)
    plain = tmp_path / "plain"
    subprocess.run([sys.executable, "-m", "venv", str(plain)], check=True)  # pip, nothing else
    python = str(plain / "bin" / "python")
    done = run_cr("install", "software", "python-dateutil", "--python", python)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("python-dateutil 2.9.0.post0 (installed, pip): ")
    assert lines[1].startswith("six 1.17.0 (installed, pip): ") and lines[1].endswith("(needed by python-dateutil)")
    ran = run_cr("env", "exec", "--python", python, "software:python-dateutil", "--",
                 python, "-c", "import dateutil, six; print(dateutil.__version__, six.__version__)")
    assert ran.returncode == 0 and ran.stdout.split() == ["2.9.0.post0", "1.17.0"], ran.stderr
