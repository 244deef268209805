"""Backfill from an S3 Inventory report on moto: reports written in AWS's documented layout (moto does not
produce them) as CSV, ORC and Parquet, read through the same index as announced files, resumed after a
kill, and refused clearly when the report is not one."""
from datetime import datetime, timedelta, timezone

import pytest

from s3sqs.config.options import OptionError, parse_options
from s3sqs.planning import inventory
from s3sqs.planning.controller import Controller
from s3sqs.planning.inventory import InventoryError, parse_manifest
from devtools.inventory_report import columnar_body, csv_body, write_report as report
from tests.support.aws import bucket_to_queue

RECENT = (datetime.now(timezone.utc) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")  # within maxFileAge


def objects(bucket: str) -> list[dict]:
    """What the report lists: objects under data/ (two of them with spaces and a plus in their keys), one
    outside it, a folder marker, an old version, a delete marker, and one too old for maxFileAge."""
    rows = [dict(Bucket=bucket, Key=f"data/day={i % 3}/f {i}+x.csv" if i < 2 else f"data/day={i % 3}/f{i}.csv",
                 VersionId="", IsLatest="true", IsDeleteMarker="false", Size=10 + i, LastModifiedDate=RECENT,
                 ETag=f"e{i}") for i in range(10)]
    rows += [dict(Bucket=bucket, Key="elsewhere/x.csv", VersionId="", IsLatest="true", IsDeleteMarker="false",
                  Size=1, LastModifiedDate=RECENT, ETag="x"),
             dict(Bucket=bucket, Key="data/folder/", VersionId="", IsLatest="true", IsDeleteMarker="false", Size=0,
                  LastModifiedDate=RECENT, ETag="d"),
             dict(Bucket=bucket, Key="data/old-version.csv", VersionId="v1", IsLatest="false",
                  IsDeleteMarker="false", Size=1, LastModifiedDate=RECENT, ETag="o"),
             dict(Bucket=bucket, Key="data/deleted.csv", VersionId="v2", IsLatest="true", IsDeleteMarker="true",
                  Size=0, LastModifiedDate=RECENT, ETag=""),
             dict(Bucket=bucket, Key="data/ancient.csv", VersionId="", IsLatest="true", IsDeleteMarker="false",
                  Size=1, LastModifiedDate="2020-01-01T00:00:00.000Z", ETag="a")]
    return rows


EXPECTED = {"data/day=0/f 0+x.csv", "data/day=1/f 1+x.csv"} | {f"data/day={i % 3}/f{i}.csv" for i in range(2, 10)}


def write_report(w, fmt: str, rows: list[dict], parts: int = 2) -> str:
    """The report of w.bucket, its rows split over `parts` data files."""
    bodies = [csv_body(rows[p::parts]) if fmt == "CSV" else columnar_body(rows[p::parts], fmt) for p in range(parts)]
    return report(w.s3, w.bucket, fmt, bodies)


def driver(w, state, manifest: str, **extra) -> Controller:
    o = {"fileFormat": "csv", "queueUrl": w.queue_url, "stateLocation": str(state), "endpointUrl": w.endpoint,
         "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1", "basePath": f"s3://{w.bucket}/data/",
         "backfillFromInventory": manifest, "maxFileAge": "30d", "maxFilesPerTrigger": "-1"}
    o.update(extra)
    d = Controller(parse_options(o))
    d.open()
    return d


def recorded(d: Controller) -> list[str]:
    return [f.key for f in d.files_between(0, d.index.last_seq)]


@pytest.mark.parametrize("fmt", ["CSV", "Parquet", "ORC"])
def test_a_report_is_recorded_once_with_the_listing_s_filters(moto_endpoint, tmp_path, fmt):
    w = bucket_to_queue(moto_endpoint)
    d = driver(w, tmp_path / "state", write_report(w, fmt, objects(w.bucket)))
    d.backfill.run_now()
    keys = recorded(d)
    assert sorted(keys) == sorted(EXPECTED)  # latest versions under data/, young enough; decoded keys
    assert {f.event_name for f in d.files_between(0, d.index.last_seq)} == {"Inventory"}
    assert d.files_between(0, 1)[0].etag in {f"e{i}" for i in range(10)}
    d.backfill.run_now()  # read once: a second start does not read it again
    assert d.index.last_seq == len(EXPECTED)
    d.close()


def test_inventoried_and_announced_files_land_once_and_a_killed_read_resumes(moto_endpoint, tmp_path, monkeypatch):
    w = bucket_to_queue(moto_endpoint)
    manifest = write_report(w, "CSV", objects(w.bucket), parts=3)
    w.put("data/day=2/f2.csv", b"x\n1\n")  # also announced
    monkeypatch.setattr(inventory, "CHUNK_ROWS", 2)
    d = driver(w, tmp_path / "state", manifest)
    calls = []

    def killed_after_three_chunks():
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")  # as a kill would, after the third chunk is durable
    with pytest.raises(KeyboardInterrupt):
        d.backfill._inventory().run(killed_after_three_chunks)
    first = set(recorded(d))
    assert 0 < len(first) < len(EXPECTED)
    d.close()

    again = driver(w, tmp_path / "state", manifest)  # from durable state only
    while msgs := again.intake.queue.receive_round(5, 1):
        again.intake.ingest(msgs)
    again.backfill.run_now()
    keys = recorded(again)
    assert sorted(keys) == sorted(EXPECTED) and len(keys) == len(set(keys))
    # resumed where the kill left it: every row of the report read exactly once over the two runs
    assert again.index.stats["listed"] == len(objects(w.bucket))
    again.close()


def test_what_is_not_a_report_is_refused_saying_why(moto_endpoint, tmp_path):
    with pytest.raises(InventoryError, match="not JSON"):
        parse_manifest("nope", "s3://b/m.json")
    with pytest.raises(InventoryError, match="lacks sourceBucket, fileFormat"):
        parse_manifest('{"files": []}', "s3://b/m.json")
    with pytest.raises(InventoryError, match="fileFormat 'XLS'"):
        parse_manifest('{"sourceBucket": "s", "fileFormat": "XLS", "files": []}', "s3://b/m.json")
    with pytest.raises(InventoryError, match="no Bucket and Key"):
        parse_manifest('{"sourceBucket": "s", "fileFormat": "CSV", "fileSchema": "Size", "files": []}', "s3://b/m.json")
    with pytest.raises(OptionError, match="backfillFromInventory.*manifest.json"):
        parse_options({"fileFormat": "csv", "queueUrl": "https://sqs.us-east-1.amazonaws.com/1/q",
                       "stateLocation": "/tmp/x", "backfillFromInventory": "s3://bucket"})
    w = bucket_to_queue(moto_endpoint)
    other = bucket_to_queue(moto_endpoint)
    d = driver(w, tmp_path / "state", write_report(other, "CSV", objects(other.bucket)))
    with pytest.raises(InventoryError, match=f"report of bucket {other.bucket}, but basePath is in {w.bucket}"):
        d.backfill.run_now()
    d.close()
