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


def job_command(*args: str) -> list[str]:
    return [str(spark_home() / "bin" / "spark-submit"), "--master", "local[2]",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
            str(ROOT / "app" / "job.py"), *args]


def job_env() -> dict[str, str]:
    """The current environment plus fake credentials for the local stand-in, and this Python for
    the driver and workers."""
    return {**os.environ, **FAKE_ENV, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
