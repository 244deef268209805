"""Schema inference and evolution through a real local Spark against a real moto server: the schema is
inferred once and kept under schemaLocation, new columns stop the stream and arrive after a restart
(addNewColumns), go to the rescued-data column (rescue), or stop it for good (failOnNewColumns)."""
import io
import json
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from devtools.committed import committed_rows
from s3sqs.config.options import parse_options
from s3sqs.job.completion import CompletionCheck
from tests.spark.test_stream import source_options, spark  # noqa: F401 (the module's Spark session)
from tests.support.aws import bucket_to_queue

pytestmark = pytest.mark.spark


def parquet(**columns) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def run(spark, tmp_path, opts, schema=None, timeout=120):
    """One query until the queue is drained; returns the error it stopped with, or None."""
    reader = spark.readStream.format("s3-sqs").options(**opts)
    if schema:
        reader = reader.schema(schema)
    df = reader.load()
    q = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="1 second").start())
    check = CompletionCheck(parse_options(opts), str(tmp_path / "ck"))
    deadline, drained = time.monotonic() + timeout, 0
    try:
        while drained < 2:
            assert time.monotonic() < deadline, f"not drained in time: waiting for {check().waiting_for()}"
            if q.exception():
                return str(q.exception())
            drained = drained + 1 if q.lastProgress and check().drained else 0
            time.sleep(1)
        return None
    finally:
        q.stop()


def stored_versions(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "schemas" / "versions").glob("*.json"))]


def test_inferred_once_then_evolved_by_a_new_column_after_a_restart(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("p/day=1/a.parquet", parquet(id=pa.array([1, 2], pa.int64()), name=["a", "b"]))
    opts = source_options(w, tmp_path, fileFormat="parquet", schemaLocation=str(tmp_path / "schemas"))
    assert run(spark, tmp_path, opts) is None
    (v0,) = stored_versions(tmp_path)
    assert [(f["name"], f["type"]) for f in v0["schema"]["fields"]] == [
        ("id", "long"), ("name", "string"), ("day", "string"), ("_rescued_data", "string")]
    assert v0["partitionColumns"] == ["day"]

    w.put("p/day=2/b.parquet", parquet(id=pa.array([3], pa.int64()), name=["c"], score=[0.5]))
    error = run(spark, tmp_path, opts)
    assert error and "NewColumnsFound" in error and "b.parquet has new columns score" in error
    assert run(spark, tmp_path, opts) is None  # the restart reads the evolved schema
    v1 = stored_versions(tmp_path)[-1]
    assert [f["name"] for f in v1["schema"]["fields"]][-1] == "score" and "new columns score" in v1["cause"]
    rows = sorted(committed_rows(tmp_path / "out", ["id", "name", "day", "score"]))
    assert rows == [(1, "a", "1", None), (2, "b", "1", None), (3, "c", "2", 0.5)]  # each row once


def test_rescue_keeps_unknown_columns_and_fail_on_new_columns_stops_for_good(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("r/a.parquet", parquet(id=pa.array([1], pa.int64()), extra=["x"]))
    opts = source_options(w, tmp_path, fileFormat="parquet", schemaEvolutionMode="rescue")
    assert run(spark, tmp_path, opts, "id LONG, _rescued_data STRING") is None
    ((id_, rescued),) = committed_rows(tmp_path / "out", ["id", "_rescued_data"])
    assert id_ == 1 and json.loads(rescued) == {"extra": "x", "_file_path": f"s3://{w.bucket}/r/a.parquet"}

    fail = tmp_path / "fail"
    w.put("r/b.parquet", parquet(id=pa.array([2], pa.int64()), more=[1]))
    opts = source_options(w, fail, fileFormat="parquet", schemaEvolutionMode="failOnNewColumns")
    for _ in range(2):  # no evolution: a restart stops again at the same file
        error = run(spark, fail, opts, "id LONG")
        assert error and "has new columns more and schemaEvolutionMode is failOnNewColumns" in error


def test_no_schema_and_no_schema_location_is_refused_with_the_fix(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    with pytest.raises(Exception, match="needs a schema.*schemaLocation"):
        spark.readStream.format("s3-sqs").options(**source_options(w, tmp_path, fileFormat="parquet")).load()


METADATA = ("_metadata STRUCT<file_path: STRING, file_name: STRING, file_size: BIGINT, file_block_start: BIGINT, "
            "file_block_length: BIGINT, file_modification_time: TIMESTAMP, event_time: TIMESTAMP, etag: STRING, "
            "version_id: STRING, seq: BIGINT>")


def test_the_metadata_column_holds_spark_s_fields_and_the_source_s_own(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    data = parquet(id=pa.array([1, 2], pa.int64()))
    w.put("m/x y.parquet", data)
    opts = source_options(w, tmp_path, fileFormat="parquet")
    assert run(spark, tmp_path, opts, f"id LONG, {METADATA}, _file_path STRING") is None
    rows = committed_rows(tmp_path / "out", ["id", "_metadata", "_file_path"])
    assert sorted(r[0] for r in rows) == [1, 2]
    meta = rows[0][1]
    assert meta["file_path"] == rows[0][2] == f"s3://{w.bucket}/m/x y.parquet"
    assert (meta["file_name"], meta["file_size"], meta["file_block_start"], meta["file_block_length"]) == (
        "x y.parquet", len(data), 0, len(data))
    assert meta["file_modification_time"] == meta["event_time"] and meta["file_modification_time"].year >= 2026
    assert meta["etag"] and meta["version_id"] is None and meta["seq"] == 1


def test_an_unknown_metadata_field_is_refused_at_start(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    df = spark.readStream.format("s3-sqs").schema("id LONG, _metadata STRUCT<file_mtime: TIMESTAMP>").options(
        **source_options(w, tmp_path, fileFormat="parquet")).load()
    with pytest.raises(Exception, match="_metadata has no field 'file_mtime'; its fields: file_path"):
        df.writeStream.format("console").option("checkpointLocation", str(tmp_path / "ck")).start().awaitTermination(30)
