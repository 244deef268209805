"""The job without --schema: it infers the schema once, keeps it under the checkpoint, and when a file
brings a new column it restarts its query by itself and the table gains the column."""
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from tests.support.aws import bucket_to_queue
from tests.support.spark import Job

pytestmark = pytest.mark.spark


def parquet(**columns) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def run_job(args, log):
    job = Job(args, log)
    try:
        assert job.wait(timeout=300) == 0, job.tail()
    finally:
        job.kill()
    return log.read_text(errors="replace")


def test_the_job_infers_then_evolves_into_a_delta_table(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/a.parquet", parquet(id=pa.array([1, 2], pa.int64()), name=["a", "b"]))
    ck, table = tmp_path / "ck", tmp_path / "delta"
    args = ["--queue-url", w.queue_url, "--format", "parquet", "--checkpoint", str(ck), "--sink", "delta",
            "--table", str(table), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1"]
    log = run_job(args, tmp_path / "run1.log")
    assert "[job] schema from" in log and "struct<id:bigint,name:string,_rescued_data:string>" in log
    assert [p.name for p in sorted((ck / "_schemas" / "versions").iterdir())] == ["000000.json"]

    w.put("in/b.parquet", parquet(id=pa.array([3], pa.int64()), name=["c"], score=[1.5]))
    log = run_job(args, tmp_path / "run2.log")
    assert "NewColumnsFound: s3://" in log and "in/b.parquet has new columns score" in log
    assert "restarting the query with the evolved schema" in log
    v1 = json.loads((ck / "_schemas" / "versions" / "000001.json").read_text())
    assert v1["schema"]["fields"][-1]["name"] == "score"
    rows = DeltaTable(str(table)).to_pyarrow_table().select(["id", "name", "score"]).to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": 1, "name": "a", "score": None}, {"id": 2, "name": "b", "score": None},
        {"id": 3, "name": "c", "score": 1.5}]
