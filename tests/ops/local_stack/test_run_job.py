"""`local-stack run-job`: the rehearsal runs the packaged job the way EMR runs submit-job's request, with the
consumer's s3:// checkpoint and output on the stand-in, so the tools see what they would see on AWS. The commands
run as an operator types them, after `source <state-dir>/env` in a shell that still holds an AWS profile."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time

import boto3
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from devtools import jars
from devtools.local_aws import EXAMPLE_CDK_JSON, free_port
from infra import STACK_NAME
from ops.local_stack import job_runs
from tests.ops.helpers import REPO, run_script
from tests.ops.local_stack.test_local_stack import ELSEWHERE, sourced_env
from tests.test_docs import _blocks, _commands, quick_start_context, rehearsal_commands

pytestmark = [pytest.mark.dist, pytest.mark.skipif(
    not (job_runs.EMR_SPARK_VENV / ".spark-installed").exists() or not jars.available("s3a"),
    reason="EMR's Spark and the S3A jars are not set up here: make local-spark")]

SCHEMA = "id LONG, customer STRING, amount DOUBLE"


def shell(command: str, env: dict, cwd, timeout: float = 240) -> subprocess.CompletedProcess:
    """A printed command line, run as printed."""
    return subprocess.run(["bash", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def table_rows(env: dict, output_uri: str) -> list[tuple]:
    fs = pafs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"], scheme="http", region=env["AWS_REGION"],
                           access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"])
    root = output_uri.removeprefix("s3://").rstrip("/")
    files = [f.path for f in fs.get_file_info(pafs.FileSelector(root, recursive=True))
             if f.path.endswith(".parquet") and "/_spark_metadata/" not in f.path]
    rows = []
    for path in files:
        t = pq.read_table(path, filesystem=fs)
        rows += list(zip(*(t.column(c).to_pylist() for c in ("id", "customer", "amount"))))
    return sorted(rows)


def _as_run_here(command: str, port: int, dist) -> str | None:
    """A rehearsal line as this test runs it, or None when it is left out: the targets of what is already set up
    here (make local-spark, package-job: the session's dist/ is used), make's targets as the commands they run
    (tests/test_make.py holds them to it) on a free port, and "again until" as a loop."""
    here = REPO / ".venv" / "bin"
    if command.startswith(("make local-spark", ".venv/bin/package-job")):
        return None
    if command == "make local-stack" or command.startswith("make local-stack "):
        return f"{here}/local-stack start --port {port} --state-dir .local-stack --outputs-file cdk-outputs.json " \
               "--cdk-json cdk.json"
    if command.startswith(".venv/bin/local-stack start "):
        return f"{here}/local-stack start --port {port} --cdk-json cdk.json " + command.split(" start ", 1)[1]
    if command == "make local-stack-stop":
        return f"{here}/local-stack stop --state-dir .local-stack"
    if "# again until" in command:
        line, comment = (part.strip() for part in command.split("#", 1))
        shown = re.escape(comment.split('"')[1]).replace(" N:", " [0-9]+:")
        return f"for _ in $(seq 120); do {line} | grep -qE {shlex.quote(shown)} && break; sleep 1; done; {line}"
    return command.replace(".venv/bin/local-stack run-job ", f".venv/bin/local-stack run-job --dist {dist} ")


def _run_as_written(commands: list[str], tmp_path, dist) -> subprocess.CompletedProcess:
    """The commands in one shell, in a folder holding the quick start's cdk.json, as this test runs them; in a
    shell that still holds an AWS profile, as after reading the AWS steps: the env file clears it."""
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "unused", "context": {
        **json.loads(EXAMPLE_CDK_JSON.read_text())["context"], **quick_start_context()}}))
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    port = free_port()
    lines = [c for c in (_as_run_here(c, port, dist) for c in commands) if c]
    try:
        r = subprocess.run(["bash", "-c", "set -euo pipefail\n" + "\n".join(lines) + "\n"], cwd=tmp_path,
                           env={**os.environ, **ELSEWHERE}, capture_output=True, text=True, timeout=600)
    finally:
        subprocess.run([str(REPO / ".venv" / "bin" / "local-stack"), "stop", "--state-dir", str(tmp_path / ".local-stack")],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@pytest.mark.skipif(shutil.which("aws") is None or shutil.which("jq") is None, reason="needs the AWS CLI and jq")
def test_the_readme_s_rehearsal_runs_as_written(tmp_path, built_dist):
    r = _run_as_written(rehearsal_commands(), tmp_path, built_dist.dist)
    assert re.search(r"\[job\] batch \d+: 1 files, 2 rows", r.stdout), r.stdout[-3000:]
    assert re.search(r"committed .* s3://\S+/orders/orders-1.csv", r.stdout), r.stdout
    assert re.search(r"id: \[\[1,2\]\]\s+customer: \[\[\"ada\",\"grace\"\]\]", r.stdout), r.stdout
    assert "cancelled run local-orders-" in r.stderr and "stopped the moto server" in r.stderr


@pytest.mark.skipif(shutil.which("aws") is None or shutil.which("jq") is None, reason="needs the AWS CLI and jq")
def test_the_cleaning_rehearsal_runs_as_written(tmp_path, built_dist):
    """docs/operations.md's: a drained multi-batch run, then every file it committed is due at once, and archived."""
    r = _run_as_written(cleaning_rehearsal_commands(), tmp_path, built_dist.dist)
    assert "created bucket my-archive" in r.stderr
    assert "3 committed files: 3 due" in r.stdout + r.stderr and "3 committed files: 3 archived" in r.stdout + r.stderr
    assert [ln.split()[-1] for ln in r.stdout.splitlines() if ln.endswith(".csv") and "landing/orders/" in ln
            and not ln.startswith(("due", "archived"))] == [f"landing/orders/orders-{i}.csv" for i in (1, 2, 3)]


def cleaning_rehearsal_commands() -> list[str]:
    text = (REPO / "docs" / "operations.md").read_text()
    section = text[text.index("#### A cleaning rehearsal on the local stack"):]
    section = section[:section.index("**How the cleaner learns")]
    return _commands(_blocks(section, "bash"))


def test_the_packaged_job_runs_on_the_stand_in_as_on_emr_and_the_tools_see_its_work(tmp_path, built_dist):
    state, outputs_file, port = tmp_path / "state", tmp_path / "cdk-outputs.json", free_port()
    local_stack = str(job_runs.ROOT / ".venv" / "bin" / "local-stack")
    started = subprocess.run([local_stack, "start", "--port", str(port), "--state-dir", str(state),
                              "--outputs-file", str(outputs_file), "--cdk-json", str(EXAMPLE_CDK_JSON)],
                             capture_output=True, text=True, timeout=300)
    try:
        assert started.returncode == 0, started.stderr
        env = sourced_env(state / "env")
        outputs = json.loads(outputs_file.read_text())[STACK_NAME]
        consumer = json.loads(outputs["Consumers"])["ingest"]
        where = ["--outputs-file", str(outputs_file), "--state-dir", str(state)]
        # The hints printed by start run as printed (they name the custom outputs file and state folder).
        hints = [ln.strip() for ln in started.stdout.splitlines() if ln.startswith("  ")]
        assert hints and all(str(outputs_file) in h for h in hints), started.stdout
        for hint in hints:
            r = shell(hint, env, tmp_path, timeout=60)
            assert r.returncode == 0, (hint, r.stderr)

        s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=env["AWS_REGION"])
        s3.put_object(Bucket=outputs["SourceBucketName"], Key=f"{consumer['prefix']}orders/orders-1.csv",
                      Body=b"id,customer,amount\n1,ada,9.50\n2,grace,3.25\n")
        job = ["--consumer", "ingest", "--format", "csv", "--schema", SCHEMA, "--option", "header=true",
               "--dist", str(built_dist.dist), "--trigger-interval", "1 second", *where]
        r = run_script("local-stack", "run-job", *job, env=env, cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr
        run_id = r.stdout.strip()
        assert "the streaming run is running" in r.stderr and f"[job] query s3sqs-ingest started" in r.stderr
        cancel = next(ln.removeprefix("cancel it with: ") for ln in r.stderr.splitlines() if ln.startswith("cancel it with: "))

        # A second run on the same checkpoint is refused, as EMR's submit-job refuses it.
        again = run_script("local-stack", "run-job", *job, env=env, cwd=tmp_path, timeout=120)
        assert again.returncode == 2 and f"run {run_id} is still running on {consumer['checkpointUri'].rstrip('/')}" \
            in again.stderr, again.stderr

        deadline, files = time.monotonic() + 120, ""
        while time.monotonic() < deadline and "committed" not in files:
            files = run_script("source-state", "files", "--consumer", "ingest", "--outputs-file", str(outputs_file),
                               env=env, cwd=tmp_path).stdout
            time.sleep(2)
        assert "committed" in files and "orders/orders-1.csv" in files, files
        # Spark's checkpoint is where EMR keeps it: the consumer's checkpointUri, on S3.
        listed = s3.list_objects_v2(Bucket=outputs["CheckpointBucketName"],
                                    Prefix=consumer["checkpointUri"].split("/", 3)[3] + "commits/")
        assert listed.get("KeyCount", 0) >= 1
        assert table_rows(env, consumer["outputUri"]) == [(1, "ada", 9.5), (2, "grace", 3.25)]
        log = run_script("local-stack", "logs", run_id, "--state-dir", str(state), env=env, cwd=tmp_path)
        assert "[job] batch 0: 1 files, 2 rows" in log.stdout, log.stdout

        r = shell(cancel, env, tmp_path)
        assert r.returncode == 0 and f"cancelled run {run_id}" in r.stderr, r.stderr

        # A drained run on the same checkpoint takes only the new file: every row once.
        s3.put_object(Bucket=outputs["SourceBucketName"], Key=f"{consumer['prefix']}orders/orders-2.csv",
                      Body=b"id,customer,amount\n3,edsger,1.00\n")
        r = run_script("local-stack", "run-job", *job, "--until-drained", env=env, cwd=tmp_path, timeout=300)
        assert r.returncode == 0 and "ended SUCCESS" in r.stderr, r.stderr
        assert table_rows(env, consumer["outputUri"]) == [(1, "ada", 9.5), (2, "grace", 3.25), (3, "edsger", 1.0)]
    finally:
        stopped = subprocess.run([local_stack, "stop", "--state-dir", str(state)], capture_output=True, text=True,
                                 timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    for folder in job_runs.runs(state):
        assert job_runs.state(job_runs.RunPaths(state, folder.name)) not in (job_runs.RUNNING, job_runs.PENDING)

