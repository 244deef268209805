"""The s3-sqs source in a real local Spark (local[2]) against a real moto server."""
import gzip
import io
import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from s3sqs.job.completion import CompletionCheck
from s3sqs.job.metrics import offset_seq
from s3sqs.config.options import parse_options
from devtools.inventory_report import csv_body, write_report
from tests.support.aws import bucket_to_queue
from devtools.committed import committed_rows, first_listings
from tests.support.spark import pyspark_version

pytestmark = pytest.mark.spark
SPARK_42 = pyspark_version() >= (4, 2)


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from s3sqs.planning.source import register
    session = (SparkSession.builder.master("local[2]").appName("s3sqs-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    register(session)
    yield session
    session.stop()


def source_options(w, tmp_path, **extra):
    opts = {"fileFormat": "csv", "queueUrl": w.queue_url, "stateLocation": str(tmp_path / "state"),
            "endpointUrl": w.endpoint, "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1"}
    opts.update({k: str(v) for k, v in extra.items()})
    return opts


def run_until_drained(spark, w, tmp_path, schema, opts, timeout=180, **trigger):
    df = spark.readStream.format("s3-sqs").schema(schema).options(**opts).load()
    q = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(**(trigger or {"processingTime": "1 second"}))
         .start())
    deadline = time.monotonic() + timeout
    try:
        if "availableNow" in trigger:
            assert q.awaitTermination(timeout), "AvailableNow run did not finish"
        else:
            check = CompletionCheck(parse_options(opts), str(tmp_path / "ck"))
            drained = 0
            while drained < 2:
                assert time.monotonic() < deadline, f"not drained in time: waiting for {check()}"
                if q.exception():
                    raise q.exception()
                drained = drained + 1 if q.lastProgress and check().drained else 0
                time.sleep(1)
        if q.exception():
            raise q.exception()
        return q
    finally:
        q.stop()


def test_csv_json_parquet_gzip_partitions_and_schema_fitting(spark, moto_endpoint, tmp_path):
    schema = "id LONG, name STRING, score DOUBLE, day STRING, _file_path STRING"
    w = bucket_to_queue(moto_endpoint)
    w.put("csv/day=2026-01-01/a b.csv", b"id,name,score,extra\n1,one,,x\n2,two,,y\n")  # extra column dropped
    w.put("csv/day=2026-01-02/naïve+plus.csv.gz", gzip.compress(b"id,name,score\n3,three,0.5\n"))
    w.put("csv/day=2026-01-03/empty.csv", b"id,name\n")
    opts = source_options(w, tmp_path, header="true", partitionColumns="day", pathGlobFilter="*.csv*")
    run_until_drained(spark, w, tmp_path, schema, opts)
    rows = sorted(committed_rows(tmp_path / "out", ["id", "name", "score", "day", "_file_path"]))
    assert rows == [
        (1, "one", None, "2026-01-01", f"s3://{w.bucket}/csv/day=2026-01-01/a b.csv"),
        (2, "two", None, "2026-01-01", f"s3://{w.bucket}/csv/day=2026-01-01/a b.csv"),
        (3, "three", 0.5, "2026-01-02", f"s3://{w.bucket}/csv/day=2026-01-02/naïve+plus.csv.gz"),
    ]


def test_json_lines_and_parquet(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("j/1.json", b'{"id": 1, "name": "a", "junk": true}\n{"id": 2}\n')
    opts = source_options(w, tmp_path / "j", fileFormat="json")
    run_until_drained(spark, w, tmp_path / "j", "id LONG, name STRING", opts)
    assert sorted(committed_rows(tmp_path / "j" / "out", ["id", "name"])) == [(1, "a"), (2, None)]

    w2 = bucket_to_queue(moto_endpoint)
    buf = io.BytesIO()
    pq.write_table(pa.table({"name": ["p", "q"], "id": pa.array([7, 8], pa.int32())}), buf)
    w2.put("p/1.parquet", buf.getvalue())
    opts = source_options(w2, tmp_path / "p", fileFormat="parquet")
    run_until_drained(spark, w2, tmp_path / "p", "id LONG, name STRING", opts)  # int32 widened, order by name
    assert sorted(committed_rows(tmp_path / "p" / "out", ["id", "name"])) == [(7, "p"), (8, "q")]


def test_backfill_from_an_inventory_report_and_the_queue_land_once(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    keys = [f"inv/day=2026-11-0{i}/f{i}.csv" for i in range(1, 4)]
    for i, k in enumerate(keys):
        w.put(k, f"id\n{i}\n".encode())
    w.sqs.purge_queue(QueueUrl=w.queue_url)  # these are known from the report alone now
    modified = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 3600))
    rows = [{"Bucket": w.bucket, "Key": k, "VersionId": "", "IsLatest": "true", "IsDeleteMarker": "false",
             "Size": 4, "LastModifiedDate": modified, "ETag": "e"} for k in keys + ["elsewhere/x.csv"]]
    manifest = write_report(w.s3, w.bucket, "CSV", [csv_body(rows)])
    w.put("inv/late.csv", b"id\n9\n")  # announced, and in no report
    w.put(keys[0], b"id\n0\n")  # announced again: the same file, once
    opts = source_options(w, tmp_path, header="true", basePath=f"s3://{w.bucket}/inv/",
                          backfillFromInventory=manifest)
    run_until_drained(spark, w, tmp_path, "id LONG", opts)
    assert sorted(committed_rows(tmp_path / "out", ["id"])) == [(0,), (1,), (2,), (9,)]


def test_bad_files_are_quarantined_and_missing_ones_recorded_by_default(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("q/good.csv", b"1\n2\n")
    w.put("q/empty.csv", b"")                                  # zero bytes: zero rows, not an error
    w.put("q/broken.csv.gz", b"\x1f\x8b not really gzip")    # cannot be decompressed
    w.put("q/gone.csv", b"3\n")
    w.s3.delete_object(Bucket=w.bucket, Key="q/gone.csv")     # deleted after it was announced
    run_until_drained(spark, w, tmp_path, "id LONG", source_options(w, tmp_path))
    assert sorted(committed_rows(tmp_path / "out", ["id"])) == [(1,), (2,)]
    quarantine = tmp_path / "state" / "quarantine"              # the default: beside the source state
    records = {r["file"].rsplit("/", 1)[-1]: r for r in
               (json.loads(p.read_text()) for p in (quarantine / "batches").rglob("*.json"))}
    assert set(records) == {"broken.csv.gz", "gone.csv"}
    assert records["gone.csv"]["status"] == "missing"
    broken = records["broken.csv.gz"]
    assert broken["status"] == "quarantined" and "inflate failed" in broken["error"]
    assert [p.read_bytes() for p in (quarantine / "files").iterdir()] == [b"\x1f\x8b not really gzip"]


def test_on_bad_file_fail_stops_the_batch_naming_the_file_and_the_fix(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("f/broken.csv.gz", b"\x1f\x8b not really gzip")
    opts = source_options(w, tmp_path, onBadFile="fail")
    with pytest.raises(Exception) as failure:
        run_until_drained(spark, w, tmp_path, "id LONG", opts, timeout=90)
    message = str(failure.value)
    assert f"s3-sqs could not read s3://{w.bucket}/f/broken.csv.gz" in message and "onBadFile=quarantine" in message


def test_malformed_rows_are_kept_with_rescued_data_by_default(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("m/rows.json", b'{"id": 1, "name": "a"}\n{"id": "x", "name": "b"}\nnot json\n')
    opts = source_options(w, tmp_path, fileFormat="json")
    run_until_drained(spark, w, tmp_path, "id LONG, name STRING, _rescued_data STRING", opts)
    got = sorted(committed_rows(tmp_path / "out", ["id", "name", "_rescued_data"]), key=str)
    path = f"s3://{w.bucket}/m/rows.json"
    assert [(i, n, r and json.loads(r)) for i, n, r in got] == [
        (1, "a", None), (None, "b", {"id": "x", "_file_path": path}), (None, None, {"_row": "not json", "_file_path": path})]
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "state" / "quarantine").rglob("*.json")]
    assert record["status"] == "malformed_rows" and record["malformed_rows"] == 2
    assert "id" in record["reason"] and "x" in record["reason"]  # the first reason: column, value, type


def test_bad_option_fails_at_load_before_any_aws_call(spark, tmp_path):
    opts = {"fileFormat": "csv", "queueUrl": "http://127.0.0.1:9/000000000000/nowhere",
            "stateLocation": str(tmp_path), "maxFilesPerTriger": "3"}
    # The queue URL points at a closed port: an AWS call would fail with a connection error instead.
    with pytest.raises(Exception, match="(?i)unknown option 'maxfilespertriger'.*did you mean 'maxFilesPerTrigger'"):
        df = spark.readStream.format("s3-sqs").schema("id LONG").options(**opts).load()
        q = df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck")).start()
        try:
            q.awaitTermination(60)
        finally:
            q.stop()


@pytest.mark.skipif(not SPARK_42, reason="Trigger.AvailableNow for Python sources arrived in Spark 4.2")
def test_available_now_drains_everything_announced_in_capped_batches(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for i in range(9):
        w.put(f"an/{i}.csv", f"{i}\n".encode())
    opts = source_options(w, tmp_path, maxFilesPerTrigger=2)
    q = run_until_drained(spark, w, tmp_path, "id LONG", opts, availableNow=True)
    assert sorted(r[0] for r in committed_rows(tmp_path / "out", ["id"])) == list(range(9))
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert len(sizes) == 5 and max(sizes) == 2  # ReadMaxFiles(2) honoured, and not just one batch


def test_a_file_bigger_than_max_partition_bytes_is_split_across_tasks_as_spark_splits_it(spark, moto_endpoint,
                                                                                           tmp_path):
    """Pieces of 16 KB read by byte range (S3 ranged reads): every row once, Spark's CSV reader's rows for the
    same file, and `_metadata`'s blocks those of Spark's own split of it."""
    lines = [b"id,name,note"] + [b'%d,n%d,"a, %s"' % (i, i, b"x" * (i % 37)) for i in range(3000)]
    data = b"\r\n".join(lines) + b"\r\n"
    local = tmp_path / "big.csv"
    local.write_bytes(data)
    w = bucket_to_queue(moto_endpoint)
    w.put("big/big.csv", data)
    meta = "_metadata STRUCT<file_block_start: BIGINT, file_block_length: BIGINT>"
    opts = source_options(w, tmp_path, header="true", maxPartitionBytes="16k")
    run_until_drained(spark, w, tmp_path, f"id LONG, name STRING, note STRING, {meta}", opts)
    ours = committed_rows(tmp_path / "out", ["id", "name", "note", "_metadata"])
    saved = {k: spark.conf.get(k) for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")}
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(16 << 10))
    spark.conf.set("spark.sql.files.openCostInBytes", "1")
    try:
        theirs = (spark.read.schema("id LONG, name STRING, note STRING").option("header", "true").csv(str(local))
                  .select("id", "name", "note", "_metadata.file_block_start", "_metadata.file_block_length")
                  .collect())
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
    assert sorted(r[:3] for r in ours) == sorted(tuple(r[:3]) for r in theirs)
    assert len(ours) == 3000
    blocks = {(m["file_block_start"], m["file_block_length"]) for *_, m in ours}
    assert len(blocks) == -(-len(data) // (16 << 10)) and blocks == {tuple(r[3:]) for r in theirs}


def test_a_big_avro_file_is_split_at_its_sync_markers_and_every_record_read_once(spark, moto_endpoint, tmp_path):
    """Pieces of 16 KB of an Avro file of small blocks: each block read by the piece its sync marker starts
    in (S3 ranged reads), every record once."""
    import fastavro
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"},
                                                        {"name": "note", "type": "string"}]}
    body = io.BytesIO()
    fastavro.writer(body, fastavro.parse_schema(schema), ({"id": i, "note": "x" * (i % 41)} for i in range(5000)),
                    sync_interval=4096)  # uncompressed: about 125 KB, 30 blocks, 8 pieces
    w = bucket_to_queue(moto_endpoint)
    w.put("big/big.avro", body.getvalue())
    meta = "_metadata STRUCT<file_block_start: BIGINT, file_block_length: BIGINT>"
    opts = source_options(w, tmp_path, fileFormat="avro", maxPartitionBytes="16k")
    run_until_drained(spark, w, tmp_path, f"id LONG, note STRING, {meta}", opts)
    ours = committed_rows(tmp_path / "out", ["id", "note", "_metadata"])
    assert sorted(r[:2] for r in ours) == [(i, "x" * (i % 41)) for i in range(5000)]
    starts = {m["file_block_start"] for *_, m in ours}
    assert len(starts) > 2 and all(s % (16 << 10) == 0 for s in starts)  # read in pieces, by several tasks


@pytest.mark.skipif(not SPARK_42, reason="ReadLimit is passed to Python sources from Spark 4.2")
def test_max_bytes_per_trigger_is_honoured(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for i in range(6):
        w.put(f"mb/{i}.csv", f"{i:09d}\n".encode())  # 10 bytes each
    opts = source_options(w, tmp_path, maxFilesPerTrigger=-1, maxBytesPerTrigger=25)
    q = run_until_drained(spark, w, tmp_path, "id LONG", opts, availableNow=True)
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 6 and max(sizes) == 2
    # reportLatestOffset: the progress shows the backlog in files, the newest recorded beside the batch's end.
    first = next(p["sources"][0] for p in q.recentProgress if p["numInputRows"])
    assert (offset_seq(first["endOffset"]), offset_seq(first["latestOffset"])) == (2, 6)


def test_spark_takes_no_metrics_from_a_python_source(spark):
    """Why the job logs each batch's figures itself: neither Spark 4.0.2's nor 4.3's Python stream
    (PythonMicroBatchStream) implements ReportsSourceMetrics, so whatever a Python source defines, the
    `metrics` of its entry in the query progress stay empty."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class Reader(DataSourceStreamReader):
        def __init__(self):
            self.n = 0

        def initialOffset(self):
            return {"seq": 0}

        def latestOffset(self, start=None, limit=None):
            self.n += 1
            return {"seq": self.n}

        def partitions(self, start, end):
            return [InputPartition((start["seq"], end["seq"]))]

        def read(self, partition):
            yield from ((i,) for i in range(*partition.value))

        def metrics(self, latest_consumed_offset=None):  # what a JVM source reports through ReportsSourceMetrics
            return {"filesQuarantined": "1"}

    class Counting(DataSource):
        @classmethod
        def name(cls):
            return "counting-with-metrics"

        def schema(self):
            return "id LONG"

        def streamReader(self, schema):
            return Reader()

    spark.dataSource.register(Counting)
    q = (spark.readStream.format("counting-with-metrics").load().writeStream.format("noop")
         .trigger(processingTime="200 milliseconds").start())
    try:
        deadline = time.monotonic() + 120
        while len([p for p in q.recentProgress if p["numInputRows"]]) < 2:
            assert time.monotonic() < deadline and q.exception() is None, q.exception()
            time.sleep(0.2)
    finally:
        q.stop()
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    assert [p["sources"][0]["metrics"] for p in batches] == [{}] * len(batches)


def _rows_by_batch(out) -> dict[int, list[int]]:
    """The first column of the rows each batch of a Parquet sink committed, by batch id."""
    by_batch: dict[int, list[int]] = {}
    for path, (batch, _) in first_listings(out).items():
        by_batch.setdefault(batch, []).extend(pq.read_table(path).column(0).to_pylist())
    return by_batch


def test_latest_first_takes_files_announced_during_a_backlog_within_a_batch_or_two(spark, moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put_many({f"lf/old{i}.csv": f"{i}\n".encode() for i in range(120)})
    opts = source_options(w, tmp_path, maxFilesPerTrigger=20, latestFirst="true")
    df = spark.readStream.format("s3-sqs").schema("id LONG").options(**opts).load()
    q = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="1 second").start())
    try:
        deadline = time.monotonic() + 120
        while not (q.lastProgress and q.lastProgress["numInputRows"]):
            assert time.monotonic() < deadline and q.exception() is None, q.exception()
            time.sleep(0.2)
        announced_at = q.lastProgress["batchId"]
        for i in (1000, 1001):  # fresh files, behind most of the backlog
            w.put(f"lf/fresh{i}.csv", f"{i}\n".encode())
        while sum(len(v) for v in _rows_by_batch(tmp_path / "out").values()) < 122:
            assert time.monotonic() < deadline and q.exception() is None, q.exception() or "not drained in time"
            time.sleep(0.5)
    finally:
        q.stop()
    by_batch = _rows_by_batch(tmp_path / "out")
    ids = sorted(i for rows in by_batch.values() for i in rows)
    assert ids == list(range(120)) + [1000, 1001]  # every file exactly once
    fresh = [b for b, rows in by_batch.items() for i in rows if i >= 1000]
    backlog_ends = max(b for b, rows in by_batch.items() if any(i < 1000 for i in rows))
    # Without latestFirst they would land in the backlog's last batch; with it, at least two batches before it
    # (the newest by event time go first, even when received together with backlog files).
    assert max(fresh) < backlog_ends - 1, (by_batch, announced_at)
