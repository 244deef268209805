"""The job's sink flags fail before Spark starts: app/job.py run with plain Python (no spark-submit,
no JVM) stops with the flag's name and how to fix it."""
import re
import subprocess
import sys

import pytest

from devtools.local_spark import ROOT

BASE = ["--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "--format", "csv",
        "--schema", "id LONG", "--checkpoint", "/tmp/unused-checkpoint"]


def job(*args):
    return subprocess.run([sys.executable, str(ROOT / "app" / "job.py"), *BASE, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("transform, message", [
    ("tests.support.transforms:not_a_transform", r"--transform tests.support.transforms:not_a_transform: the "
                                                 r"function must take one argument"),
    ("tests.support.transforms:missing", r"--transform tests.support.transforms:missing: module "
                                         r"'tests.support.transforms' has no 'missing'"),
    ("no_such_module:fn", r"--transform no_such_module:fn: no module named 'no_such_module'"),
    ("not-a-spec", r"--transform 'not-a-spec' must look like module:function"),
])
def test_a_bad_transform_stops_the_job_before_spark_starts(transform, message):
    proc = job("--sink", "delta", "--table", "/tmp/unused-table", "--transform", transform)
    assert proc.returncode == 2
    assert "job.py: error:" in proc.stderr
    assert re.search(message, proc.stderr), proc.stderr
    assert "SparkContext" not in proc.stderr  # nothing of Spark ran


def test_sink_flags_are_checked_too():
    proc = job("--sink", "iceberg", "--table", "orders")
    assert proc.returncode == 2 and "--table 'orders' is not a catalog table name" in proc.stderr
    proc = job()
    assert proc.returncode == 2 and "--sink parquet needs --output" in proc.stderr
