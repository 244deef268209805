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
from tests.planning.test_stream import source_options, spark  # noqa: F401 (the module's Spark session)
from tests.support.aws import bucket_to_queue
from tests.support.spark import only_on_newest_spark

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
            assert time.monotonic() < deadline, f"not drained in time: waiting for {check()}"
            if q.exception():
                return str(q.exception())
            drained = drained + 1 if q.lastProgress and check().drained else 0
            time.sleep(1)
        return None
    finally:
        q.stop()


def stored_versions(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "schemas" / "versions").glob("*.json"))]


@only_on_newest_spark  # inference, evolution and the restart run on 4.0.2 in the drift test below
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


@only_on_newest_spark  # the suite's time: one Spark each; evolution itself runs on both
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
        assert error and "b.parquet has new columns more and schemaEvolutionMode is failOnNewColumns" in error


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


DRIFT = [  # each file one drift after the first: a new column, a new nested field, a type change, a dropped column
    ("d/1.json", {"id": 1, "name": "a", "addr": {"city": "x"}}),
    ("d/2.json", {"id": 2, "name": "b", "addr": {"city": "y"}, "score": 1.5}),
    ("d/3.json", {"id": 3, "name": "c", "addr": {"city": "z", "zip": "123"}}),
    ("d/4.json", {"id": "four", "name": "d", "addr": {"city": "w"}}),
    ("d/5.json", {"id": 5, "addr": {"city": "v"}}),
]
GIVEN = "id LONG, name STRING, addr STRUCT<city: STRING>, _rescued_data STRING"


def drift_stream(spark, moto_endpoint, tmp_path, mode, schema=None, restarts=0):
    """The first file alone, then the four drifts in one batch; returns the errors of each run, the rows."""
    w = bucket_to_queue(moto_endpoint)
    extra = {"schemaLocation": str(tmp_path / "schemas")} if schema is None else {"schemaEvolutionMode": mode}
    opts = source_options(w, tmp_path, fileFormat="json", **extra)
    w.put(*encode(DRIFT[0]))
    errors = [run(spark, tmp_path, opts, schema)]
    for f in DRIFT[1:]:
        w.put(*encode(f))
    errors += [run(spark, tmp_path, opts, schema) for _ in range(1 + restarts)]
    return w, errors


def encode(f):
    return f[0], json.dumps(f[1]).encode()


def test_drift_add_new_columns_evolves_at_each_new_column_and_lands_every_row_once(spark, moto_endpoint, tmp_path):
    _, errors = drift_stream(spark, moto_endpoint, tmp_path, "addNewColumns", restarts=2)
    assert errors[0] is None and errors[-1] is None  # at most two restarts: one per task that met new columns
    stops = " ".join(e for e in errors if e)
    # the batch's two tasks each meet one: the first to fail stops the query, and the other's proposal may
    # be stored by then, so that the restart takes both without a second stop
    assert "NewColumnsFound" in stops and ("score" in stops or "addr.zip" in stops)
    v2 = stored_versions(tmp_path)[-1]["schema"]["fields"]
    assert [f["name"] for f in v2] == ["addr", "id", "name", "_rescued_data", "score"]
    assert [f["name"] for f in v2[0]["type"]["fields"]] == ["city", "zip"]  # nested, in its struct
    rows = sorted(committed_rows(tmp_path / "out", ["id", "name", "addr", "score"]), key=str)
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("1", "a", None), ("2", "b", "1.5"), ("3", "c", None), ("5", None, None), ("four", "d", None)]
    assert {r[0]: (r[2] or {}).get("zip") for r in rows}["3"] == "123"


def test_drift_rescue_keeps_what_the_schema_lacks_and_what_does_not_fit(spark, moto_endpoint, tmp_path):
    w, errors = drift_stream(spark, moto_endpoint, tmp_path, "rescue", GIVEN)
    assert errors == [None, None]
    rows = {r[1]: r for r in committed_rows(tmp_path / "out", ["id", "name", "addr", "_rescued_data"])}
    assert set(rows) == {"a", "b", "c", "d", None}
    assert json.loads(rows["b"][3]) == {"score": 1.5, "_file_path": f"s3://{w.bucket}/d/2.json"}
    assert json.loads(rows["c"][3])["addr"] == {"city": "z", "zip": "123"}  # a new nested field: its column whole
    assert rows["d"][0] is None and json.loads(rows["d"][3])["id"] == "four"  # a type change: rescued
    assert rows[None][0] == 5 and rows["a"][3] is None


def test_drift_fail_on_new_columns_stops_at_the_first_new_column(spark, moto_endpoint, tmp_path):
    _, errors = drift_stream(spark, moto_endpoint, tmp_path, "failOnNewColumns", GIVEN.replace(", _rescued_data STRING", ""))
    assert errors[0] is None and "has new columns" in errors[1] and "schemaEvolutionMode is failOnNewColumns" in errors[1]
    assert sorted(committed_rows(tmp_path / "out", ["id"])) == [(1,)]


def test_drift_none_ignores_new_columns_but_counts_them(spark, moto_endpoint, tmp_path):
    w, errors = drift_stream(spark, moto_endpoint, tmp_path, "none", "id LONG, name STRING, addr STRUCT<city: STRING>")
    assert errors == [None, None]
    # 4.json's one row has a type change, and no rescued-data column is declared: every row of the file is
    # malformed, so it is quarantined (docs/formats.md, "Every row malformed") where Spark commits (None, "d").
    assert sorted(committed_rows(tmp_path / "out", ["id", "name"]), key=str) == [
        (1, "a"), (2, "b"), (3, "c"), (5, None)]
    records = [json.loads(p.read_text()) for p in (tmp_path / "state" / "quarantine").rglob("*.json")]
    seen = {r["file"].rsplit("/", 1)[-1]: r for r in records if r.get("file")}
    assert seen["2.json"]["new_columns"] == ["score"] and seen["3.json"]["new_columns"] == ["addr.zip"]
    assert seen["4.json"]["status"] == "quarantined" and "not json as declared" in seen["4.json"]["error"]
    assert "four" in seen["4.json"]["error"]
