"""A file S3 answers 403 AccessDenied for, read as a task reads it, through the fault proxy in front of the moto
server: S3 answers 403 for a key the job role may not read, and for a missing key when the role has no
s3:ListBucket. Which one it is cannot be told, so the file is neither retried nor taken for missing: onBadFile
decides, as for a bad file. Quarantined, it is recorded (with what the 403 means, and no copy, which would be
denied too) and counted in FilesQuarantined; with onBadFile=fail the batch stops naming the file."""
from __future__ import annotations

import boto3
import pyarrow as pa
import pytest

from devtools.fault_proxy import FaultProxy, Faults, object_reads_of
from s3sqs.core.endpoint import Endpoint
from s3sqs.core.errors import FileReadError
from s3sqs.core.files import Piece, S3File
from s3sqs.job.metrics import QUARANTINED, batch_metrics, emf_document
from s3sqs.reading.formats import FormatOptions
from s3sqs.reading.reader import ReadSpec, read_partition
from s3sqs.state import quarantine
from s3sqs.state.store import open_store

REGION = "us-east-1"
SRC = "reader-403-source"
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
MEANING = ("HTTP 403: the key may have been deleted (S3 answers 403 for a missing key without s3:ListBucket) "
           "or the job role may not read it")
BATCH_END = 7


@pytest.fixture(scope="module")
def buckets(moto_endpoint):
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION)
    s3.create_bucket(Bucket=SRC)
    files = {}
    for seq, key in enumerate(("in/good.csv", "in/not-ours.csv", "in/big-not-ours.csv"), start=1):
        body = f"id,name\n{seq},n{seq}\n{seq + 10},m{seq}\n".encode()
        etag = s3.put_object(Bucket=SRC, Key=key, Body=body)["ETag"].strip('"')
        files[key] = S3File(SRC, key, len(body), etag, event_ms=1_700_000_000_000, seq=seq)
    # Announced, then deleted: without s3:ListBucket, S3 answers 403 for it, not 404.
    files["in/gone.csv"] = S3File(SRC, "in/gone.csv", 20, "0" * 32, event_ms=1_700_000_000_000, seq=4)
    return s3, files


def _spec(proxy: FaultProxy, location: str, on_bad_file: str = "quarantine") -> ReadSpec:
    return ReadSpec(FormatOptions("csv", {"header": "true"}), Endpoint(proxy.endpoint_url, REGION),
                    quarantine_location=location, on_bad_file=on_bad_file)


def test_a_403_is_quarantined_with_its_meaning_no_copy_and_counted(moto_endpoint, buckets, tmp_path):
    _, files = buckets
    denied = object_reads_of(SRC, "in/not-ours.csv", "in/big-not-ours.csv", "in/gone.csv")
    # A local quarantine: the proxy passes on requests with a Content-Length only, not pyarrow's chunked PUTs.
    location = str(tmp_path / "quarantine")
    big = files["in/big-not-ours.csv"]
    items = [files["in/good.csv"], files["in/not-ours.csv"], files["in/gone.csv"],
             Piece(big, 0, 10)]  # a piece of a split file: the streamed path settles it the same way
    with FaultProxy(moto_endpoint, Faults(), deny=denied) as proxy:
        batches = list(read_partition(items, _spec(proxy, location), SCHEMA, BATCH_END))
        asked = proxy.injected["denied"]
    assert pa.Table.from_batches(batches, SCHEMA).to_pylist() == [{"id": 1, "name": "n1"}, {"id": 11, "name": "m1"}]
    # One request each: never retried, and no copy attempted (it would be denied too).
    assert asked == 3

    store = open_store(location, None)
    records = {r["file"]: r for r in quarantine.read_records(store, BATCH_END)}
    assert sorted(records) == [f"s3://{SRC}/in/big-not-ours.csv", f"s3://{SRC}/in/gone.csv",
                               f"s3://{SRC}/in/not-ours.csv"]
    for r in records.values():
        assert r["status"] == "quarantined" and r["copy"] is None
        assert r["error"].startswith(MEANING + " (OSError: ") and "ACCESS_DENIED" in r["error"]
    assert "in bytes 0 to 10 of the file" in records[f"s3://{SRC}/in/big-not-ours.csv"]["error"]
    assert not (tmp_path / "quarantine" / "files").exists()

    # Counted as the job counts a batch's problems: its FilesQuarantined metric.
    problems = quarantine.tally(list(records.values()))
    assert problems == {"quarantined": 3, "missing": 0, "malformed_rows": 0, "new_columns": 0}
    m = batch_metrics({"batchId": 3}, {}, {}, problems, {}, 0, 0)
    assert emf_document(m, "orders", 0)[QUARANTINED] == 3


@pytest.mark.parametrize("key", ["in/not-ours.csv", "in/gone.csv"])
def test_a_403_with_on_bad_file_fail_stops_naming_the_file_and_what_the_403_means(moto_endpoint, buckets, tmp_path,
                                                                                 key):
    _, files = buckets
    with FaultProxy(moto_endpoint, Faults(), deny=object_reads_of(SRC, key)) as proxy:
        with pytest.raises(FileReadError) as failed:
            list(read_partition([files["in/good.csv"], files[key]], _spec(proxy, str(tmp_path / "q"), "fail"),
                                SCHEMA, BATCH_END))
        assert proxy.injected["denied"] == 1  # not retried
    message = str(failed.value)
    assert message.startswith(f"s3-sqs could not read s3://{SRC}/{key}: {MEANING} (OSError: ")
    assert "Fix or delete the file" not in message and "onBadFile=quarantine" in message
    assert "\n" not in message
    assert not (tmp_path / "q").exists()  # nothing recorded: the batch fails, and Spark runs it again
