"""The operator scripts import the installed project: they run from any directory, with no sys.path edits."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.ops.helpers import REPO

SCRIPTS = ("package-job", "submit-job", "job-runs", "onboard-account", "redrive-dlq", "local-stack",
           "compact-table", "source-state")


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_runs_from_outside_the_repository(name, tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "scripts" / name), "--help"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: {name} ")


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_does_not_edit_sys_path(name):
    assert "sys.path" not in (REPO / "scripts" / name).read_text()
