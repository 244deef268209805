"""Parity with Spark's own readers: the same local files, the same schema and options, through Spark's file
source and through this source's executor-side reader, compared row for row."""
from __future__ import annotations

import json
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from s3sqs.config.options import parse_options
from s3sqs.core.files import S3File
from s3sqs.planning.source import arrow_schema, read_spec
from s3sqs.reading.reader import read_partition

QUEUE = "http://127.0.0.1:1/123456789012/parity"


@contextmanager
def parity_session(name: str, **conf: str):
    """A local[2] Spark in UTC for one parity module (Spark's readers on one side), stopped afterwards."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master("local[2]").appName(f"s3sqs-parity-{name}")
               .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1").config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "2").config("spark.log.level", "ERROR"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    try:
        yield session
    finally:
        session.stop()


def local_file(path: Path) -> S3File:
    path = Path(path).resolve()
    return S3File("", str(path).lstrip("/"), path.stat().st_size, event_ms=1_700_000_000_000, scheme="file")


def spark_rows(spark, fmt: str, paths: list[Path], ddl: str, options: dict[str, str] | None = None) -> list[dict]:
    """Spark's own reader (batch), as Python values through Arrow."""
    df = spark.read.format(fmt).schema(ddl).options(**(options or {})).load([str(p) for p in paths])
    return _rows(df.toArrow())


def source_rows(spark, fmt: str, paths: list[Path], ddl: str, options: dict[str, str] | None = None,
                state: Path | None = None) -> list[dict]:
    """This source's reader over the same files, with the schema Spark would hand it."""
    state = state or Path(paths[0]).parent / "_parity_state"
    opts = parse_options({"fileFormat": fmt, "queueUrl": QUEUE, "stateLocation": str(state), **(options or {})})
    schema = arrow_schema(spark.createDataFrame([], ddl).schema)
    spec = read_spec(opts, schema.names)
    batches = list(read_partition([local_file(p) for p in paths], spec, schema, batch_end=1))
    return _rows(pa.Table.from_batches(batches, schema))


def _rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


def canonical(rows: list[dict]) -> list[str]:
    """Rows as sortable text (NaN equal to NaN), for comparing two readers whatever their row order."""
    def fix(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, bytes):
            return v.hex()
        return v
    return sorted(json.dumps(fix(r), default=str, sort_keys=True) for r in rows)


def assert_same_rows(spark, fmt: str, paths: list[Path], ddl: str, options: dict[str, str] | None = None) -> list[dict]:
    """Both readers give the same rows (in any order); returns Spark's rows for further checks."""
    theirs = spark_rows(spark, fmt, paths, ddl, options)
    ours = source_rows(spark, fmt, paths, ddl, options)
    assert canonical(ours) == canonical(theirs), (
        f"{fmt} {options or {}} schema {ddl!r}:\n spark: {theirs[:5]}\n ours:  {ours[:5]}")
    return theirs
