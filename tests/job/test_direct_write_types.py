"""A direct write (the read tasks write the table's files) and a write after a shuffle (the rows through
Spark's JVM, as with a transform) give the same Delta rows, for every kind of column. The second run finds
its file by listing basePath alone, with an empty queue: `--until-drained` waits for that listing."""
import json

import pytest
from deltalake import DeltaTable

from tests.support.aws import bucket_to_queue
from tests.support.spark import Job, only_on_emr_spark

pytestmark = [pytest.mark.spark, only_on_emr_spark]
SCHEMA = ("id LONG, ts TIMESTAMP, ntz TIMESTAMP_NTZ, d DATE, amount DECIMAL(12,3), tags ARRAY<STRING>, "
          "attrs MAP<STRING,INT>, addr STRUCT<city: STRING, zip: INT>, ok BOOLEAN, f FLOAT, s SHORT")
ROWS = [{"id": 1, "ts": "2026-11-01T10:00:00.123456Z", "ntz": "2026-01-01T00:00:00", "d": "2026-11-02",
         "amount": "12345.678", "tags": ["a", None], "attrs": {"k": 1}, "addr": {"city": "x", "zip": 9}, "ok": True,
         "f": 1.5, "s": 3},
        {"id": 2}]


def table_rows(w, work, extra: list[str]) -> list[dict]:
    args = ["--queue-url", w.queue_url, "--format", "json", "--schema", SCHEMA, "--checkpoint", str(work / "ck"),
            "--sink", "delta", "--table", str(work / "t"), "--endpoint-url", w.endpoint, "--region", "us-east-1",
            "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1", "--option", "includeExistingFiles=true",
            "--option", f"basePath=s3://{w.bucket}/in/", *extra]
    job = Job(args, work.with_suffix(".log"))
    try:
        assert job.wait(timeout=300) == 0, job.tail()
    finally:
        job.kill()
    return sorted(DeltaTable(str(work / "t")).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def test_a_direct_write_gives_the_rows_a_write_after_a_shuffle_gives(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/a.json", "\n".join(json.dumps(r) for r in ROWS).encode())
    direct = table_rows(w, tmp_path / "direct", [])
    assert "(files written by the read tasks)" in (tmp_path / "direct.log").read_text()
    shuffled = table_rows(w, tmp_path / "shuffled", ["--rebalance-writes"])  # lists the same file again
    assert "(files written by the read tasks)" not in (tmp_path / "shuffled.log").read_text()
    assert direct == shuffled and len(direct) == 2
    assert direct[0]["amount"] is not None and direct[0]["attrs"] == [("k", 1)] and direct[1]["ts"] is None
