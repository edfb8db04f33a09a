"""What the user is shown is what runs (docs/security.md): control, escape and bidi characters in
what cr lists before asking for consent, in Error: lines and in `cr repo trust --dry-run` are
shown escaped, so a script cannot redraw the listing (a carriage return, erase-line and
cursor-up hide `id > ...` behind a harmless `mkdir -p $PREFIX/bin`)."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from conftest import _env
from helpers.terminal import read_terminal
from helpers.trust import MARK, author_archive, recipe

from cr.textsafe import shown

# What the victim would see on a terminal: a harmless line, while `touch MARKER` runs first.
HIDDEN = "touch {marker}; printf x\r\x1b[2K\x1b[1A\u202e\nmkdir -p $PREFIX/bin"


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if not c.isprintable() and c != "\n"]


def test_shown_escapes_controls_bidi_and_separators_and_keeps_letters():
    assert shown("mkdir -p $PREFIX/bin") == "mkdir -p $PREFIX/bin"
    assert shown("Grüße, 日本, café") == "Grüße, 日本, café"
    assert shown("a\rb\x1b[2Kc\x1b[1A\u202ed\u200be\x85f\u2028g\nh\ti\x00") == \
        "a\\rb\\x1b[2Kc\\x1b[1A\\u202ed\\u200be\\x85f\\u2028g\\nh\\ti\\x00"
    assert shown(3) == "3"


def _archive(tmp_path, run_cr):
    marker = tmp_path / f"{MARK}-hidden"
    evil = recipe("evil-tool")
    evil["install"].append({"method": "script", "versions": ["1.0.0"], "script": HIDDEN.format(marker=marker)})
    return author_archive(tmp_path, run_cr, [evil]), marker


def test_the_refusal_and_the_dry_run_show_the_script_escaped(tmp_path, run_cr):
    archive, marker = _archive(tmp_path, run_cr)
    done = run_cr("init", "solution", str(archive))
    assert done.returncode == 1 and not marker.exists()
    assert _raw_controls(done.stderr) == [], repr(done.stderr)
    error = next(ln for ln in done.stderr.splitlines() if ln.startswith("Error: "))
    assert "\\r\\x1b[2K\\x1b[1A\\u202e\\nmkdir -p $PREFIX/bin" in error, error
    assert run_cr("unpack", str(archive)).returncode == 0
    name = next(r["name"] for r in json.loads(run_cr("repo", "list", "--json").stdout) if r["origin"] == "archive")
    dry = run_cr("repo", "trust", name, "--dry-run")
    assert dry.returncode == 0 and _raw_controls(dry.stdout + dry.stderr) == [], repr(dry.stderr)
    listed = [ln for ln in dry.stderr.splitlines() if "install script" in ln]
    # the exact argv the installer runs, quoted as a shell would take it
    assert listed and "/bin/sh -e -c 'touch " in listed[0] and "\\x1b[1A" in listed[0], dry.stderr
    raw = json.loads(run_cr("repo", "trust", name, "--dry-run", "--json").stdout)  # JSON keeps the exact text
    script = next(i for i in raw["would_run"] if i["what"] == "install script")
    assert script["argv"] == ["/bin/sh", "-e", "-c", HIDDEN.format(marker=marker)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drives a pseudo-terminal")
def test_the_consent_prompt_on_a_terminal_shows_the_script_escaped(tmp_path, run_cr, cr_home):
    archive, marker = _archive(tmp_path, run_cr)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "cr", "init", "solution", str(archive)], stdin=slave, stdout=slave,
                            stderr=slave, env=_env({"CR_HOME": str(cr_home)}), close_fds=True)
    os.close(slave)
    asked = []

    def answer(seen: bytes):
        if not asked and b"and go on?" in seen:
            asked.append(True)
            return b"n\n"
        return None

    seen = read_terminal(master, proc, 120, answer)
    answered = bool(asked)
    proc.wait(timeout=30)
    os.close(master)
    text = seen.decode("utf-8", "replace").replace("\r\n", "\n")
    assert answered, text
    assert proc.returncode == 1 and not marker.exists()
    prompt = text[text.index("This needs code"):text.index("and go on?")]  # (cr's own progress line redraws above it)
    assert "\x1b" not in prompt and "\u202e" not in prompt and "\r" not in prompt, repr(prompt)
    assert "/bin/sh -e -c 'touch " in prompt and "\\r\\x1b[2K\\x1b[1A\\u202e\\nmkdir -p $PREFIX/bin" in prompt, prompt
