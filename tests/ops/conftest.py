"""Fixtures for the packaging and submission tests: one real build of dist/ per session."""
from __future__ import annotations

import platform

import os
import sys
from pathlib import Path

import pytest

from ops.packaging import build, target

REGION = "us-east-1"
FAST = 1  # gzip level of the tests' builds


def local_python_home(version: str) -> str:
    """Where the archive's bin/python should point for a local run: the system interpreter when it
    exists (as on EMR, /usr/bin), else the directory of the interpreter running the tests."""
    if Path(f"/usr/bin/python{version}").exists():
        return "/usr/bin"
    return str(Path(os.path.realpath(sys.executable)).parent)


@pytest.fixture(scope="session")
def local_target() -> target.Target:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return target.Target(python=version, arch=host_arch(), python_home=local_python_home(version))


@pytest.fixture(scope="session")
def built_dist(tmp_path_factory, local_target) -> build.BuildResult:
    """dist/ for this machine's Python and CPU, built once per session (wheels cached under build/). gzip's
    fastest level: the level changes only the archive's size and the time to write it, half of a build's."""
    return build.build(local_target, dist=tmp_path_factory.mktemp("dist"), compresslevel=FAST)


def host_arch() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)
