"""s3sqs.config.ddl agrees with Spark's own parser, on the Spark version under test (make test runs both).

Every VALID string of tests/config/test_ddl.py parses in Spark to the same columns, types, nullability and
comments; its canonical form (`Schema.ddl`) parses with StructType.fromDDL, which DataStreamReader.schema()
uses and which refuses `name: type` columns; and every SPARK_REJECTS string fails in Spark too.
"""
from __future__ import annotations

import os
import sys

import pytest

from s3sqs.config.ddl import parse_schema
from tests.config.test_ddl import SPARK_REJECTS, VALID

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("s3sqs-ddl")
               .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    yield session
    session.stop()


def spark_columns(struct) -> list[tuple]:
    return [(f.name, f.dataType.simpleString(), f.nullable, f.metadata.get("comment")) for f in struct.fields]


def test_valid_strings_parse_in_spark_to_the_same_columns(spark):
    from pyspark.sql.types import StructType, _parse_datatype_string

    for text, _ in VALID:
        ours = parse_schema(text)
        theirs = _parse_datatype_string(text)
        assert isinstance(theirs, StructType), text
        assert spark_columns(theirs) == [(c.name, c.type.simple, c.nullable, c.comment) for c in ours.columns], text
        # The canonical form goes through the reader's own path (StructType.fromDDL) to the same schema.
        via_reader = StructType.fromJson(__import__("json").loads(
            spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(ours.ddl).json()))
        assert spark_columns(via_reader) == spark_columns(theirs), ours.ddl


def test_rejected_strings_fail_in_spark_too(spark):
    from pyspark.sql.types import _parse_datatype_string

    accepted = []
    for text, _ in SPARK_REJECTS:
        try:
            _parse_datatype_string(text)
        except Exception:  # ParseException, or ArithmeticException for a too-large DECIMAL
            continue
        accepted.append(text)
    assert accepted == []
