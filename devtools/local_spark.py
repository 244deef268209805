"""Running app/job.py with this environment's own PySpark, as the demo, benchmarks and tests do."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from devtools.local_aws import FAKE_ENV

ROOT = Path(__file__).resolve().parents[1]


def spark_home() -> Path:
    """The pip-installed PySpark distribution (located, not imported)."""
    return Path(importlib.util.find_spec("pyspark").origin).parent


def job_command(*args: str, conf: dict[str, str] | None = None, python: Path | None = None) -> list[str]:
    """spark-submit of app/job.py in local mode, with this environment's PySpark or that of the venv whose
    `python` is given; with `--table-writer spark`, Spark's Delta or Iceberg jars (fetched by make setup) go
    on the classpath, as EMR puts its bundled ones there."""
    settings = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                **table_writer_conf(args), **(conf or {})}
    home = spark_home() if python is None else venv_spark_home(python)
    return [str(home / "bin" / "spark-submit"), "--master", "local[2]",
            *(a for k, v in settings.items() for a in ("--conf", f"{k}={v}")),
            str(ROOT / "app" / "job.py"), *args]


def flag_value(args, flag: str) -> str | None:
    args = list(args)
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def table_writer_conf(args) -> dict[str, str]:
    """The local jars of Spark's table writer the job's flags ask for; none for the python writer."""
    from devtools import jars

    sink = (flag_value(args, "--sink") or "").lower()
    if (flag_value(args, "--table-writer") or "").lower() != "spark" or sink not in ("delta", "iceberg"):
        return {}
    conf = {"spark.jars": ",".join(str(p) for p in jars.paths(sink))}
    if sink == "delta":
        # Delta reads its log with 50 partitions by default: on a 2-core local run that is most of a batch.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
    return conf


def venv_spark_home(python: Path) -> Path:
    """Another venv's PySpark distribution: make setup links it as VENV/bin/spark-distribution."""
    return (Path(python).parent / "spark-distribution").resolve()


def job_env(python: Path | None = None) -> dict[str, str]:
    """The current environment plus fake credentials for the local stand-in, and this Python (or the
    given venv's) for the driver and workers."""
    py = str(python or sys.executable)
    home = spark_home() if python is None else venv_spark_home(python)
    return {**os.environ, **FAKE_ENV, "SPARK_HOME": str(home), "PYSPARK_PYTHON": py,
            "PYSPARK_DRIVER_PYTHON": py, "SPARK_LOCAL_IP": "127.0.0.1"}


def wait_for_rows(query, expected: int, what: str, poll: float = 0.05) -> tuple[int, int]:
    """Wait until a streaming query's batches hold `expected` rows; (rows, batches with rows). A benchmark's
    clock: it stops the process with the query's error if the query fails first."""
    import time
    seen, rows = set(), 0
    while rows < expected:
        if query.exception():
            raise SystemExit(f"{what} failed: {query.exception()}")
        for p in query.recentProgress:
            if p["batchId"] not in seen and p["numInputRows"]:
                seen.add(p["batchId"])
                rows += p["numInputRows"]
        time.sleep(poll)
    return rows, len(seen)
