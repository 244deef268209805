"""Spark's local-cluster master as a test fixture: the driver's JVM (the test's own, or spark-submit's)
starts two executor JVMs of one core each from the pip-installed PySpark, each with its own Python
workers. They inherit the driver JVM's environment, so PYSPARK_PYTHON and PYTHONPATH (the app code, the
fault injector's sitecustomize) reach them as they reach local mode's workers.

Run on PySpark 4.0.2 (EMR's version) only, in make test's second lane (marker `cluster`)."""
from __future__ import annotations

import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from devtools.local_spark import CLUSTER_MASTER, cluster_conf, spark_home
from tests.support.spark import only_on_emr_spark

cluster_tests = [pytest.mark.cluster, only_on_emr_spark]


@contextmanager
def cluster_session(name: str):
    """A SparkSession on CLUSTER_MASTER with the source registered; both executors are up when it returns."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from s3sqs.planning.source import register
    builder = SparkSession.builder.master(CLUSTER_MASTER).appName(name)
    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.driver.bindAddress": "127.0.0.1", **cluster_conf()}
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    app = session.sparkContext.applicationId
    try:
        assert session.sparkContext.master == CLUSTER_MASTER, \
            f"a session on {session.sparkContext.master} was still running in this process"
        register(session)
        yield session
    finally:
        session.stop()
        # The executors' folders and logs (the worker keeps them under SPARK_HOME/work, fixed for the
        # JVM this process started once: jobs get a private home instead, see private_spark_home).
        work = Path(os.environ.get("SPARK_HOME") or spark_home()) / "work"
        shutil.rmtree(work / app, ignore_errors=True)
        if work.is_dir() and not any(work.iterdir()):
            work.rmdir()


def executor_ids(spark) -> list[str]:
    """The active executors' ids (the driver not counted)."""
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    ids = [summaries.apply(i).id() for i in range(summaries.size())]
    return sorted(i for i in ids if i != "driver")


def ask_for_executors(spark, total: int) -> bool:
    """Ask the cluster for `total` executors in all (after killExecutor lowered the count it asks for)."""
    no_locality = spark._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap({})
    return spark.sparkContext._jsc.sc().requestTotalExecutors(total, 0, no_locality)


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(interval)
