"""Spark's own Python processes import pyspark from the unpacked folder, with bytecode, through the .pth
make setup puts in each venv (s3sqs/core/zipped_pyspark.py)."""
import os
import sys
from pathlib import Path

import pytest

from s3sqs.core import zipped_pyspark

pytestmark = pytest.mark.spark


def test_a_spark_worker_imports_pyspark_with_bytecode():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("s3sqs-zipped-pyspark")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    try:
        where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()[0]
    finally:
        spark.stop()
    # The worker's path began with $SPARK_HOME/python/lib/pyspark.zip; its pyspark came from the folder.
    assert where.startswith(tuple(root + os.sep for root in zipped_pyspark.cache_roots())), where
    package = Path(where).parent
    assert Path(where).parents[1].name.startswith("pyspark-")
    assert list((package / "__pycache__").glob("__init__.*.pyc"))
