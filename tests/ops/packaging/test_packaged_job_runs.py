"""Proof that dist/ runs: the packaged job, started the way EMR Serverless starts it, ingests from moto.

What is the same as on EMR:
- the StartJobRun request is the one submit-job builds; its sparkSubmitParameters and entry point
  arguments are turned into a local spark-submit command line, s3:// artifact URIs replaced by the
  dist/ files (ops/local_stack/emr_locally.py, which `local-stack run-job` runs);
- `spark.archives=…#environment,…#connector`, and `./environment/bin/python` for the driver, the
  planner and the executors. `spark.emr-serverless.driverEnv.*` becomes the driver's environment,
  which is what EMR does with it;
- the archives are also unpacked in the driver's working directory, as EMR localizes them for the
  driver container before it starts.

What differs, on purpose: `--master local[2]`, the Spark UI off, local checkpoint and output paths
(local Spark has no s3:// filesystem) and `--endpoint-url` to reach moto.

Isolation: the process gets a bare environment (no virtualenv on PATH, no PYTHONPATH). The archive's
bin/python points at a system interpreter that has none of the connector's dependencies; PySpark
comes from the Spark distribution of the spark-submit used, so every connector import must come from
the two archives.
"""
from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest

from ops.local_stack.emr_locally import spark_submit_args as local_spark_submit_args

from infra.local_stand_in import deploy_to_moto, synth_template, write_outputs_file
from ops.packaging import build, target
from ops.emr import request as emr_request
from ops.stack_outputs import load_outputs
from tests.ops.conftest import REGION
from tests.support.spark import only_on_newest_spark
from devtools.local_aws import FAKE_ENV
from devtools.local_spark import log_tail, spark_home  # this environment's PySpark (4.3 or 4.0.2)

pytestmark = pytest.mark.dist

CONSUMER = "ingest"
ROWS_PER_FILE = 50
FILES = 3


def bare_env(extra: dict[str, str]) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", **FAKE_ENV, **extra}
    for k in ("JAVA_HOME", "TMPDIR"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def unpack(dist: Path, manifest: dict, workdir: Path) -> None:
    """What EMR does for the driver container: each archive under its #alias in the working directory."""
    with tarfile.open(dist / manifest["environment"]) as tar:
        tar.extractall(workdir / target.ENV_ARCHIVE_ALIAS, filter="tar")
    with zipfile.ZipFile(dist / manifest["connector"]) as zf:
        zf.extractall(workdir / target.CONNECTOR_ARCHIVE_ALIAS)


@pytest.mark.spark
@only_on_newest_spark  # the archive, not the Spark version, is the subject; its build is in this pass
def test_packaged_job_ingests_from_moto(moto_server, built_dist, tmp_path, record_property):
    moto_server.reset()
    endpoint = moto_server.endpoint_url
    outputs_file = write_outputs_file(deploy_to_moto(synth_template(), endpoint, REGION), tmp_path / "cdk-outputs.json")
    outputs = load_outputs(outputs_file)
    consumer = outputs.consumer(CONSUMER)
    manifest = build.load_manifest(built_dist.dist)

    # Files land in the source bucket; S3 -> SNS -> the consumer's queue, as deployed.
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint)
    source = outputs.get("SourceBucketName")
    expected = set()
    for f in range(FILES):
        lines = ["id,name"]
        for i in range(ROWS_PER_FILE):
            n = f * ROWS_PER_FILE + i
            lines.append(f"{n},name {n}")
            expected.add((n, f"name {n}"))
        s3.put_object(Bucket=source, Key=f"{consumer.prefix}proof/part {f}.csv", Body="\n".join(lines).encode())

    workdir, checkpoint, output = tmp_path / "driver", tmp_path / "checkpoint", tmp_path / "output"
    workdir.mkdir()
    unpack(built_dist.dist, manifest, workdir)
    env_python = workdir / "environment" / "bin" / "python"

    # Isolation check: the archive's interpreter finds the connector and its dependencies inside the
    # two unpacked archives and nowhere else, and has no PySpark of its own.
    probe = subprocess.run(
        [str(env_python), "-c", "import pyarrow, rocksdict, boto3, s3sqs; "
         "print('\\n'.join(m.__file__ for m in (pyarrow, rocksdict, boto3, s3sqs)))"],
        cwd=workdir, env=bare_env({}), capture_output=True, text=True, timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    for path in probe.stdout.split():
        assert Path(path).resolve().is_relative_to(workdir.resolve()), path
    no_spark = subprocess.run([str(env_python), "-c", "import pyspark"], cwd=workdir, env=bare_env({}),
                              capture_output=True, text=True, timeout=60)
    assert no_spark.returncode != 0 and "No module named 'pyspark'" in no_spark.stderr

    spec = emr_request.JobSpec(
        consumer=CONSUMER, format="csv", schema="id LONG, name STRING", checkpoint=str(checkpoint),
        output=str(output), region=REGION, job_endpoint_url=endpoint,
        options=("header=true",), trigger_interval="1 second",
    )
    locations = emr_request.consumer_artifact_locations(manifest, outputs, CONSUMER)
    request = emr_request.build_start_job_run_request(outputs, spec, locations, manifest, "proof")
    emr_request.validate_request(request)
    local = {locations.uri(name): str(built_dist.dist / name) for name in manifest["artifacts"]}
    argv, driver_env = local_spark_submit_args(request, local)
    assert driver_env == {"PYSPARK_DRIVER_PYTHON": "./environment/bin/python",
                          "PYSPARK_PYTHON": "./environment/bin/python"}
    # --verbose keeps Spark's INFO log, which names the interpreter of each Python runner (checked below).
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[2]",
           "--conf", "spark.ui.enabled=false", *argv, "--verbose"]

    log_path = tmp_path / "spark-submit.log"
    commit0 = checkpoint / "commits" / "0"
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=endpoint)
    rows, first_commit, drained = set(), None, False
    with open(log_path, "wb") as log:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=workdir, env=bare_env(driver_env), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            # A STREAMING run never ends by itself: watch the checkpoint, the sink and the queue.
            deadline = started + 150
            while time.monotonic() < deadline and proc.poll() is None:
                if first_commit is None and commit0.exists():
                    first_commit = time.monotonic() - started
                if first_commit is not None:
                    rows = _sink_rows(output)
                    drained = _queue_depth(sqs, consumer.queue_url) == 0
                    if rows == expected and drained:
                        break
                time.sleep(0.5)
            exited = proc.poll()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)  # the group of the spark-submit this test started
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    assert exited is None, f"spark-submit exited {exited} on its own\n{log_tail(log_path, 60)}"
    assert first_commit is not None, f"no batch committed within 150 s\n{log_tail(log_path, 60)}"
    assert rows == expected, f"sink holds {len(rows)} of {len(expected)} rows\n{log_tail(log_path, 60)}"
    # Messages are deleted once their batch is known to be in the sink.
    assert drained, f"queue {consumer.queue_url} not drained after the batch committed\n{log_tail(log_path, 60)}"
    # The streaming source runner ran the archive's interpreter.
    (opened,) = [ln for ln in log_path.read_text(errors="replace").splitlines() if "s3-sqs source on" in ln]
    assert "environment/bin/python)" in opened, opened
    table = pq.read_table(output)
    assert table.num_rows == len(expected)  # exactly once: no duplicates

    total = time.monotonic() - started
    record_property("spark_submit_to_first_commit_s", round(first_commit, 1))
    print(f"\npackaged job on Spark {importlib.metadata.version('pyspark')}: spark-submit -> commits/0 "
          f"{first_commit:.1f} s, whole run {total:.1f} s, {table.num_rows} rows")


def _sink_rows(output: Path) -> set:
    if not (output / "_spark_metadata" / "0").exists():
        return set()
    try:
        t = pq.read_table(output)
    except Exception:  # a file still being written; look again on the next poll
        return set()
    return set(zip(t.column("id").to_pylist(), t.column("name").to_pylist()))


def _queue_depth(sqs, queue_url: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return sum(int(v) for v in attrs.values())
