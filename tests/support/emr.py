"""A dist/ of placeholders, for the tests that submit without building one."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ops.packaging.target import CONNECTOR_NAME, ENTRY_POINT_NAME, Target


def stand_in_dist(dist: Path) -> Path:
    """A dist/ with package-job's names and manifest, for the stack's X86_64; its files are placeholders."""
    dist.mkdir()
    target = Target()
    artifacts = {}
    for name in (ENTRY_POINT_NAME, CONNECTOR_NAME, target.env_archive_name):
        data = f"stand-in for {name}\n".encode()
        (dist / name).write_bytes(data)
        artifacts[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "unpacked_size": len(data)}
    manifest = {"target": {"python": target.python, "arch": target.arch, "glibc": target.glibc,
                           "python_home": target.python_home, "emr_architecture": target.emr_architecture},
                "entry_point": ENTRY_POINT_NAME, "connector": CONNECTOR_NAME, "environment": target.env_archive_name,
                "artifacts": artifacts, "packages": {}, "transform_modules": []}
    (dist / "manifest.json").write_text(json.dumps(manifest))
    return dist
