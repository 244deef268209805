"""The operator tools are the project's entry points ([project.scripts]): installed into the environment's
bin/ with its own interpreter, they run from any directory, and a command's follow-up hints name the tools
the way the user reached it, so they run as printed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ops import cli

TOOLS = ("package-job", "submit-job", "job-runs", "onboard-account", "redrive-dlq", "local-stack",
         "compact-table", "source-state")
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("name", TOOLS)
def test_tool_runs_from_outside_the_repository_without_the_venv_active(name, tmp_path):
    r = subprocess.run([str(BIN / name), "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: {name} ")


def test_hints_name_a_sibling_tool_the_way_this_one_was_run(monkeypatch):
    monkeypatch.setattr(sys, "argv", [".venv/bin/submit-job", "--help"])
    assert cli.command("job-runs") == ".venv/bin/job-runs"
    monkeypatch.setattr(sys, "argv", ["submit-job"])
    assert cli.command("job-runs") == "job-runs"
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/pytest"])  # not one of ours: its bare name
    assert cli.command("job-runs") == "job-runs"
