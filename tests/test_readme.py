"""README's two set-up commands are a promise: CI runs the test one verbatim."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_readme_has_exactly_two_setup_commands():
    commands = _commands()
    assert len(commands) == 2, commands
    assert all(c.startswith("python3 -m venv .venv") for c in commands)


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pytest" in test_command
    assert test_command in ci.splitlines()


def test_readme_main_job_uses_only_existing_commands():
    from click.testing import CliRunner  # noqa: F401  (the CLI must be importable)
    from cr.cli.main import cli

    main_job = _commands()[0]
    for step in main_job.split("&&"):
        words = step.split()
        if words and words[0] == "cr":
            assert words[1] in cli.list_commands(None), f"README runs unknown command: {step.strip()}"
