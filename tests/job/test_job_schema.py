"""The job without --schema: it infers the schema once, keeps it under the checkpoint, and when a file
brings a new column it restarts its query by itself and the table gains the column."""
import gzip
import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from devtools.committed import committed_rows
from tests.support.aws import bucket_to_queue
from tests.support.spark import Job, only_on_emr_spark, only_on_newest_spark
from tests.support.tables import iceberg_target

pytestmark = pytest.mark.spark


def parquet(**columns) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def new_columns(log: str, key: str) -> set[str]:
    found = re.search(re.escape(key) + r" has new columns ([^;]+);", log)
    assert found, log[-3000:]
    return set(found.group(1).split(", "))


def run_job(args, log):
    job = Job(args, log)
    try:
        assert job.wait(timeout=300) == 0, job.tail()
    finally:
        job.kill()
    return log.read_text(errors="replace")


@only_on_emr_spark
def test_the_job_infers_then_evolves_into_a_delta_table(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/a.parquet", parquet(id=pa.array([1, 2], pa.int64()), name=["a", "b"], addr=[{"city": "x"}, None]))
    ck, table = tmp_path / "ck", tmp_path / "delta"
    args = ["--queue-url", w.queue_url, "--format", "parquet", "--checkpoint", str(ck), "--sink", "delta",
            "--table", str(table), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1"]
    log = run_job(args, tmp_path / "run1.log")
    assert "[job] schema from" in log and "struct<id:bigint,name:string,addr:struct<city:string>,_rescued_data:string>" in log
    assert [p.name for p in sorted((ck / "_schemas" / "versions").iterdir())] == ["000000.json"]

    w.put("in/b.parquet", parquet(id=pa.array([3], pa.int64()), name=["c"], addr=[{"city": "y", "zip": "9"}],
                                  score=[1.5]))
    log = run_job(args, tmp_path / "run2.log")
    assert "NewColumnsFound: s3://" in log and new_columns(log, "in/b.parquet") == {"addr.zip", "score"}
    assert "restarting the query with the evolved schema" in log
    v1 = json.loads((ck / "_schemas" / "versions" / "000001.json").read_text())
    assert v1["schema"]["fields"][-1]["name"] == "score"
    rows = DeltaTable(str(table)).to_pyarrow_table().select(["id", "name", "addr", "score"]).to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == [  # the new nested field too, null in earlier rows
        {"id": 1, "name": "a", "addr": {"city": "x", "zip": None}, "score": None},
        {"id": 2, "name": "b", "addr": None, "score": None},
        {"id": 3, "name": "c", "addr": {"city": "y", "zip": "9"}, "score": 1.5}]


def cloudtrail_file(n: int, day: int) -> bytes:
    records = [{"eventTime": f"2026-11-{day:02d}T10:{i % 60:02d}:00Z", "eventName": "GetObject",
                "requestParameters": {"bucketName": "b", "key": f"k{i}", "Host": ["h1", "h2"]},
                "responseElements": None if i % 2 else {"x-amz-request-id": str(i)}} for i in range(n)]
    return gzip.compress(json.dumps({"Records": records}).encode())


@only_on_emr_spark
def test_cloudtrail_logs_with_objects_kept_as_json_text(moto_endpoint, tmp_path):
    """The log pipeline of the schema issue: nested objects declared STRING keep their JSON text, and
    every event lands in its date partition (it used to be 0 rows, exit 0)."""
    w = bucket_to_queue(moto_endpoint)
    sizes = [(5, 1), (7, 2), (3, 2), (6, 3)]
    for i, (n, day) in enumerate(sizes):
        w.put(f"AWSLogs/ct/{i}.json.gz", cloudtrail_file(n, day))
    out = tmp_path / "out"
    schema = ("Records ARRAY<STRUCT<eventTime: TIMESTAMP, eventName: STRING, requestParameters: STRING, "
              "responseElements: STRING>>")
    log = run_job(["--queue-url", w.queue_url, "--format", "json", "--schema", schema, "--checkpoint",
                   str(tmp_path / "ck"), "--output", str(out), "--transform", "tests.support.transforms:explode_records",
                   "--partition-by", "date", "--endpoint-url", moto_endpoint, "--region", "us-east-1",
                   "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
                   "--option", "sqs.longPollingWaitTimeSeconds=1"], tmp_path / "ct.log")
    rows = committed_rows(out, ["date", "requestParameters", "responseElements"])
    assert len(rows) == sum(n for n, _ in sizes), log[-3000:]
    assert sorted({r[0] for r in rows}) == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert json.loads(rows[0][1])["bucketName"] == "b" and '"Host": ["h1", "h2"]' in rows[0][1]
    assert {r[2] is None for r in rows} == {True, False}
    assert "malformed" not in log


@only_on_emr_spark
def test_the_job_infers_json_then_evolves_into_an_iceberg_table(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/a.json", b'{"id": 1, "doc": {"k": 1}}\n{"id": 2, "doc": {"k": 2}}\n')
    args = ["--queue-url", w.queue_url, "--format", "json", "--checkpoint", str(tmp_path / "ck"), "--sink",
            "iceberg", "--table", "lake.events", "--catalog", "sql", "--catalog-uri", f"sqlite:///{tmp_path}/catalog.db",
            "--warehouse", str(tmp_path / "warehouse"), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1"]
    log = run_job(args, tmp_path / "run1.log")
    assert "struct<doc:struct<k:string>,id:string,_rescued_data:string>" in log  # JSON: STRING leaves
    w.put("in/b.json", b'{"id": 3, "doc": {"k": 3, "v": 7}, "tag": "new"}\n')
    log = run_job(args, tmp_path / "run2.log")
    assert new_columns(log, "in/b.json") == {"doc.v", "tag"} and "restarting the query with the evolved schema" in log
    table = iceberg_target(tmp_path / "catalog.db", "lake.events").table()
    data = table.scan().to_arrow()
    assert sorted(zip(data.column("id").to_pylist(), data.column("tag").to_pylist(),
                      [d["v"] for d in data.column("doc").to_pylist()])) == [
        ("1", None, None), ("2", None, None), ("3", "new", "7")]
    # the new fields came in the commit of their first rows: no snapshot of the table is without its schema
    assert [s.schema_id for s in table.snapshots()][-1] == table.schema().schema_id
    assert len(table.schemas()) == 2


@only_on_newest_spark
def test_the_job_infers_csv_with_types_into_the_file_sink_and_evolves(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/a.csv", b"id,amount\n1,2.5\n2,3.0\n")
    out = tmp_path / "out"
    args = ["--queue-url", w.queue_url, "--format", "csv", "--checkpoint", str(tmp_path / "ck"), "--output", str(out),
            "--option", "header=true", "--option", "inferColumnTypes=true", "--option", "schemaHints=id LONG",
            "--endpoint-url", moto_endpoint, "--region", "us-east-1", "--trigger-interval", "1 second",
            "--until-drained", "--idle-checks", "2", "--option", "sqs.longPollingWaitTimeSeconds=1"]
    log = run_job(args, tmp_path / "run1.log")
    assert "struct<id:bigint,amount:double,_rescued_data:string>" in log
    w.put("in/b.csv", b"id,amount,note\n3,4.5,hi\n")
    log = run_job(args, tmp_path / "run2.log")
    assert "has new columns note" in log
    assert sorted(committed_rows(out, ["id", "amount", "note"])) == [(1, 2.5, None), (2, 3.0, None), (3, 4.5, "hi")]
