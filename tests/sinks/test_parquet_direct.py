"""The parquet sink written by the read tasks (job/direct_write.py, sinks/file_sink_log.py) is a folder Spark
reads as it reads its own file sink's: the same rows and column types, partition folders included, and one
query's output can move between Spark's file sink and direct writes on the same checkpoint either way."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from devtools.committed import first_listings
from s3sqs.sinks.file_sink_log import FileSinkLogTarget
from s3sqs.sinks.location import Location
from s3sqs.sinks.target import WrittenFile
from tests.support.aws import bucket_to_queue
from tests.support.parity import parity_session
from tests.support.spark import Job

pytestmark = pytest.mark.spark
SCHEMA = ("id LONG, p STRING, ts TIMESTAMP, ntz TIMESTAMP_NTZ, d DATE, amount DECIMAL(12,3), tags ARRAY<STRING>, "
          "attrs MAP<STRING,INT>, addr STRUCT<city: STRING, zip: INT>, ok BOOLEAN, f FLOAT, s SHORT, b BYTE, "
          "raw BINARY")
PARTITIONS = ["plain", "a b", "x:y/z", "é", "", None, "100%"]


@pytest.fixture(scope="module")
def spark():
    with parity_session("parquet-direct") as session:  # Spark's reader on the other side, as parity tests have
        yield session


def _rows(first_id: int) -> list[dict]:
    full = {"ts": "2026-11-01T10:00:00.123456Z", "ntz": "2026-01-01T00:00:00", "d": "2026-11-02",
            "amount": "12345.678", "tags": ["a", None], "attrs": {"k": 1}, "addr": {"city": "x", "zip": 9}, "ok": True,
            "f": 1.5, "s": 3, "b": -2, "raw": "AQID"}
    return [{"id": first_id + i, "p": p, **(full if i % 2 == 0 else {})} for i, p in enumerate(PARTITIONS)]


def run_job(w, tmp_path, name: str, extra: list[str]) -> str:
    args = ["--queue-url", w.queue_url, "--format", "json", "--schema", SCHEMA, "--checkpoint", str(tmp_path / "ck"),
            "--output", str(tmp_path / "out"), "--partition-by", "p", "--endpoint-url", w.endpoint,
            "--region", "us-east-1", "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1", *extra]
    job = Job(args, tmp_path / f"{name}.log")
    try:
        assert job.wait(timeout=300) == 0, job.tail()
    finally:
        job.kill()
    return (tmp_path / f"{name}.log").read_text()


def test_direct_and_spark_written_batches_of_one_query_read_back_alike(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/1.json", "\n".join(json.dumps(r) for r in _rows(0)).encode())
    assert "(files written by the read tasks)" not in run_job(w, tmp_path, "spark1", ["--table-writer", "spark"])
    w.put("in/2.json", "\n".join(json.dumps(r) for r in _rows(100)).encode())
    assert "(files written by the read tasks)" in run_job(w, tmp_path, "direct", [])
    w.put("in/3.json", "\n".join(json.dumps(r) for r in _rows(200)).encode())  # and back to Spark's file sink
    assert "(files written by the read tasks)" not in run_job(w, tmp_path, "spark2", ["--table-writer", "spark"])

    out = str(tmp_path / "out")
    rows = {r["id"]: r for r in (r.asDict(recursive=True) for r in spark.read.parquet(out).collect())}
    assert sorted(rows) == sorted(i + k for k in (0, 100, 200) for i in range(len(PARTITIONS)))
    for i in range(len(PARTITIONS)):
        spark_row, direct_row = dict(rows[i], id=None), dict(rows[100 + i], id=None)
        assert direct_row == spark_row == dict(rows[200 + i], id=None)
    assert rows[0]["amount"] is not None and rows[0]["raw"] == bytearray(b"\x01\x02\x03")
    assert [rows[i]["p"] for i in range(len(PARTITIONS))] == ["plain", "a b", "x:y/z", "é", None, None, "100%"]

    # Each writer's files alone: the same Spark schema, partition column included.
    by_batch: dict[int, list[str]] = {}
    for path, (batch, _) in first_listings(tmp_path / "out").items():
        by_batch.setdefault(batch, []).append(str(path))
    direct_files = [p for ps in by_batch.values() for p in ps if ".zstd.parquet" in p]
    spark_files = [p for ps in by_batch.values() for p in ps if ".zstd.parquet" not in p]
    assert direct_files and spark_files
    schema_of = lambda files: spark.read.option("basePath", out).parquet(*files).schema  # noqa: E731
    assert schema_of(direct_files) == schema_of(spark_files)


def test_spark_reads_a_log_compacted_here_and_no_orphan_file(spark, tmp_path):
    target = FileSinkLogTarget(Location(str(tmp_path)))
    for batch in range(13):
        if batch == 9:  # a batch that wrote nothing, at the first compaction
            continue
        files = []
        for n in range(2):
            path = tmp_path / f"part-{batch}-{n}.parquet"
            pq.write_table(pa.table({"v": [batch * 10 + n]}), path)
            files.append(WrittenFile(uri=str(path), relative_path=path.name, size=path.stat().st_size, rows=1))
        pq.write_table(pa.table({"v": [-1]}), tmp_path / f"orphan-{batch}.parquet")  # a killed write's file
        target.commit(files, "q", batch)
    got = sorted(r.v for r in spark.read.parquet(str(tmp_path)).collect())
    assert got == sorted(b * 10 + n for b in range(13) if b != 9 for n in range(2))


def test_one_function_decides_who_writes_the_files_and_says_why_not(spark, moto_endpoint, tmp_path):
    from types import SimpleNamespace

    from s3sqs.sinks.kinds import from_flags
    from s3sqs.config.options import job_source_options
    from s3sqs.job.direct_write import query_writer
    from s3sqs.planning.source import register

    register(spark)
    w = bucket_to_queue(moto_endpoint)
    options = job_source_options("json", w.queue_url, str(tmp_path / "ck"), {}, "us-east-1", w.endpoint, None)
    df = spark.readStream.format("s3-sqs").options(**options).schema("id LONG, p STRING").load()

    def decide(output: str, **flags):
        sink = from_flags(SimpleNamespace(**{
            "sink": "parquet", "table": None, "output": output, "rebalance_writes": False, "table_writer": None,
            "partition_by": (), "target_file_size": None, "transform": None, "catalog": None, "catalog_uri": None,
            "warehouse": None, "endpoint_url": w.endpoint, "region": "us-east-1", **flags}))
        writer, rows_of, refusal = query_writer(spark, options, df, sink)
        return rows_of is not None, refusal

    assert decide(str(tmp_path / "direct")) == (True, None)
    assert decide(str(tmp_path / "spark"), table_writer="spark") == (False, None)  # asked for: no reason to give
    direct, refusal = decide("s3a://bucket/out")  # direct writes asked for, and refused by the output
    assert not direct and "--output s3a://bucket/out: the read tasks write local folders and s3:// URIs only" == refusal
