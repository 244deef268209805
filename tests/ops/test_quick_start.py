"""README.md's quick start's AWS steps, run as written on a moto server that holds the wiring of the context it
shows (the single-account cdk.json): every command the local stand-in can serve runs, in one shell, in order.

Left out, each for the reason given in SKIPPED: what needs a real account (the CDK deploy), what only the job
itself produces (moto runs nothing), and the 130 MB package build, for which a stand-in dist/ is written where
submit-job is pointed (`--dist`, the one flag the test adds)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote_plus

import boto3
import pytest

from devtools.local_aws import FAKE_ENV, start_moto_server
from infra import STACK_NAME
from infra.local_stand_in import deploy_to_moto, synth_template, write_outputs_file
from tests.support.emr import stand_in_dist
from tests.test_docs import quick_start_commands, quick_start_context

SKIPPED = {
    "make tools": "the tests already run in the environment make setup builds, which holds the tools",
    "export AWS_PROFILE=": "there is no such profile here; the local stand-in's credentials are in the environment",
    "npx cdk ": "needs an AWS account; the test builds the same template's wiring on moto instead",
    ".venv/bin/package-job": "downloads ~130 MB of wheels (tests/ops/packaging builds a real dist/)",
    ".venv/bin/source-state": "reads the state the job writes, and moto runs no job",
    ".venv/bin/python -c": "reads the table the job writes, and moto runs no job",
}


def _runnable(commands: list[str], dist: Path) -> tuple[list[str], list[str]]:
    run, skipped = [], []
    for c in commands:
        if any(c.startswith(prefix) for prefix in SKIPPED):
            skipped.append(c)
            continue
        run.append(c.replace(".venv/bin/submit-job ", f".venv/bin/submit-job --dist {dist} "))
    return run, skipped


@pytest.mark.skipif(shutil.which("aws") is None or shutil.which("jq") is None, reason="needs the AWS CLI and jq")
def test_the_quick_start_runs_as_written_on_the_local_stand_in(tmp_path):
    server = start_moto_server(tmp_path / "moto.log")
    try:
        outputs = deploy_to_moto(synth_template(quick_start_context()), server.endpoint_url, "us-east-1")
        write_outputs_file(outputs, tmp_path / "cdk-outputs.json")
        (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
        run, skipped = _runnable(quick_start_commands(), stand_in_dist(tmp_path / "dist-stand-in"))
        assert len(skipped) == 8 and len(run) == 9, skipped  # the README changed: look at SKIPPED again
        script = "set -euo pipefail\n" + "\n".join(run) + '\necho "RUN=$RUN"\n'
        env = {**os.environ, **FAKE_ENV, "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": server.endpoint_url}
        env.pop("AWS_PROFILE", None)
        r = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        run_id = r.stdout.strip().splitlines()[-1].removeprefix("RUN=")
        assert run_id and "started STREAMING job run " + run_id in r.stderr
        assert '"mode": "STREAMING"' in r.stdout  # the preview printed the request first

        # The uploaded file was announced to the consumer's queue, as the job would receive it.
        queue = json.loads(outputs["Consumers"])["orders"]["queueUrl"]
        sqs = boto3.client("sqs", endpoint_url=server.endpoint_url, region_name="us-east-1")
        bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10,
                                                         WaitTimeSeconds=2).get("Messages", [])]
        keys = [unquote_plus(r["s3"]["object"]["key"]) for b in bodies for r in json.loads(b)["Records"]]
        assert "orders/orders-1.csv" in keys, bodies
        emr = boto3.client("emr-serverless", endpoint_url=server.endpoint_url, region_name="us-east-1")
        run = emr.get_job_run(applicationId=outputs["EmrApplicationId"], jobRunId=run_id)["jobRun"]
        assert run["state"] == "CANCELLED" and run["tags"]["s3sqs:consumer"] == "orders"

        # The hints a submission prints run as printed, in the same directory, with no virtualenv on PATH.
        submit = subprocess.run(
            [".venv/bin/submit-job", "--dist", str(tmp_path / "dist-stand-in"), "--consumer", "orders", "--format",
             "json", "--checkpoint", json.loads(outputs["Consumers"])["orders"]["checkpointUri"] + "second",
             "--apply"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert submit.returncode == 0, submit.stderr
        hints = [line.split(": ", 1)[1] for line in submit.stderr.splitlines() if line.startswith("follow it with: ")]
        assert hints and hints[0].startswith(".venv/bin/job-runs show "), submit.stderr
        bare = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")} | {"PATH": "/usr/bin:/bin"}
        shown = subprocess.run(["bash", "-c", hints[0]], cwd=tmp_path, env=bare, capture_output=True, text=True,
                               timeout=60)
        assert shown.returncode == 0 and "state:" in shown.stdout, shown.stderr
    finally:
        server.stop()


def test_the_section_s_jq_paths_name_the_stack():
    assert all(".S3SqsStreaming." in c for c in quick_start_commands() if c.count("jq "))
    assert STACK_NAME == "S3SqsStreaming"
