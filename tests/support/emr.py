"""A StartJobRun request run locally: the proof that what submit-job sends EMR works."""
from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

from ops.packaging.target import CONNECTOR_NAME, ENTRY_POINT_NAME, Target


def local_spark_submit_args(request: dict, local_paths: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Translate a StartJobRun request into a local spark-submit command line and driver environment.

    s3:// artifact URIs are replaced by local paths; `spark.emr-serverless.driverEnv.X=V` becomes the
    environment variable X=V, which is what EMR Serverless sets on its driver. Used by the proof test,
    so the local run gets exactly the settings EMR gets.
    """
    driver = request["jobDriver"]["sparkSubmit"]

    def localize(text: str) -> str:
        for uri, path in local_paths.items():
            text = text.replace(uri, path)
        return text

    argv, env = [], {}
    words = shlex.split(driver.get("sparkSubmitParameters", ""))
    i = 0
    while i < len(words):
        if words[i] == "--conf":
            k, v = words[i + 1].split("=", 1)
            prefix = "spark.emr-serverless.driverEnv."
            if k.startswith(prefix):
                env[k[len(prefix):]] = v
            else:
                argv += ["--conf", f"{k}={localize(v)}"]
            i += 2
        else:
            argv.append(localize(words[i]))
            i += 1
    argv.append(localize(driver["entryPoint"]))
    argv += [localize(a) for a in driver.get("entryPointArguments", [])]
    return argv, env


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
