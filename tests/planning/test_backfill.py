"""Backfill by listing on moto: files already in the bucket and files announced meanwhile land once each."""
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from s3sqs.planning.controller import Controller
from s3sqs.config.options import OptionError, parse_options
from s3sqs.planning.batch_limits import Limit
from devtools.local_aws import wire_consumer
from infra.local_stand_in import source_bucket_name, synth_template
from tests.support.aws import clients

EXISTING, NEW = 2_500, 200  # three listing pages and more; bench figures come from larger runs


def opts(w_endpoint, bucket, queue_url, state, **extra):
    o = {"fileFormat": "csv", "queueUrl": queue_url, "stateLocation": str(state), "endpointUrl": w_endpoint,
         "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1", "basePath": f"s3://{bucket}/data/",
         "includeExistingFiles": "true", "maxFilesPerTrigger": "-1"}
    o.update(extra)
    return parse_options(o)


@pytest.fixture(scope="module")
def bucket_with_history(moto_endpoint):
    """A bucket with EXISTING objects put before the stack's wiring turned its notifications on."""
    s3, sqs = clients(moto_endpoint)
    name = f"t-{uuid.uuid4().hex[:10]}"
    bucket = source_bucket_name(synth_template(), f"{name}-")
    s3.create_bucket(Bucket=bucket)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: s3.put_object(Bucket=bucket, Key=f"data/day={i % 7}/old-{i:05d}.csv", Body=b"1\n"),
                      range(EXISTING)))
    s3.put_object(Bucket=bucket, Key="elsewhere/not-listed.csv", Body=b"1\n")
    path = wire_consumer(moto_endpoint, name)
    assert path.bucket == bucket
    return s3, sqs, bucket, path.queue_url


def test_existing_and_announced_files_land_once_across_a_restart(bucket_with_history, moto_endpoint, tmp_path):
    s3, sqs, bucket, q = bucket_with_history
    d = Controller(opts(moto_endpoint, bucket, q, tmp_path / "state"))
    t0 = time.monotonic()
    first_end = d.latest_offset(0, Limit(None, None))  # starts the listing and the intake
    first_batch_s = time.monotonic() - t0

    def announce(i):  # during the listing: new files, and old ones written again
        s3.put_object(Bucket=bucket, Key=f"data/new-{i:04d}.csv" if i < NEW else f"data/day={i % 7}/old-{i:05d}.csv",
                      Body=b"2\n")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(announce, range(NEW + 50)))
    deadline = time.monotonic() + 300
    while d.backfill.running and time.monotonic() < deadline:
        time.sleep(0.2)
    listing_s = time.monotonic() - t0
    deadline = time.monotonic() + 120
    while d.index.last_seq < EXISTING + NEW and time.monotonic() < deadline:
        time.sleep(0.5)
    d.close()  # a restart: the listing is complete, so it is not repeated; duplicates are ignored anyway

    again = Controller(opts(moto_endpoint, bucket, q, tmp_path / "state"))
    end = again.latest_offset(first_end, Limit(None, None))
    files = again.files_between(0, end)
    keys = [f.key for f in files]
    assert len(keys) == len(set(keys)) == EXISTING + NEW, (len(keys), len(set(keys)))
    assert "elsewhere/not-listed.csv" not in keys
    assert sum(f.event_name == "Listing" for f in files) >= EXISTING - 50
    time.sleep(2)
    assert again.index.last_seq == EXISTING + NEW  # nothing more arrived: every message was a duplicate
    again.close()
    print(f"\nlisting: {EXISTING} objects in {listing_s:.1f} s ({EXISTING / listing_s:.0f}/s); "
          f"first offset call returned {first_end} files after {first_batch_s:.2f} s")


def test_a_listing_cut_short_is_done_again_on_restart(bucket_with_history, moto_endpoint, tmp_path):
    s3, sqs, bucket, q = bucket_with_history
    d = Controller(opts(moto_endpoint, bucket, q, tmp_path / "state", pathGlobFilter="*.csv"))
    d.open()
    d.intake.stopping.set()  # the listing stops after its first page, as if the job died there
    d.backfill.run()
    assert 0 < d.index.last_seq < EXISTING
    first_page = d.index.last_seq
    d.intake.stopping.clear()
    d.close()
    restarted = Controller(opts(moto_endpoint, bucket, q, tmp_path / "state", pathGlobFilter="*.csv"))
    restarted.open()
    restarted.backfill.run()
    assert restarted.index.last_seq >= EXISTING and restarted.index.stats["listed"] >= EXISTING + first_page
    keys = [f.key for f in restarted.index.records(1, restarted.index.last_seq)]
    assert len(keys) == len(set(keys))
    restarted.close()


def test_listing_needs_a_base_path():
    with pytest.raises(OptionError, match="includeExistingFiles.*set basePath"):
        parse_options({"fileFormat": "csv", "queueUrl": "https://sqs.us-east-1.amazonaws.com/1/q",
                       "stateLocation": "/tmp/x", "includeExistingFiles": "true"})


def test_files_older_than_max_file_age_are_counted_and_named_in_the_log(bucket_with_history, moto_endpoint,
                                                                         tmp_path, caplog):
    """includeExistingFiles takes what maxFileAge allows; the files it leaves are counted and the limit named."""
    s3, sqs, bucket, q = bucket_with_history
    time.sleep(1.1)  # every object is now older than the limit below
    d = Controller(opts(moto_endpoint, bucket, q, tmp_path / "state", maxFileAge="1s"))
    d.open()
    with caplog.at_level("INFO", logger="s3sqs"):
        d.backfill.run()
    listed = d.index.stats["listed"]
    assert d.index.last_seq == 0 and listed >= EXISTING
    lines = [r.getMessage() for r in caplog.records]
    assert any("modified within maxFileAge (1 s)" in m for m in lines), lines
    assert any(f"skipped {listed} files modified more than maxFileAge (1 s) ago: they are not ingested" in m
               for m in lines), lines
    d.close()


def test_a_running_backfill_is_in_the_durable_status_so_until_drained_waits_for_it(bucket_with_history, moto_endpoint,
                                                                                  tmp_path):
    from s3sqs.state.snapshots import Snapshots, read_status
    from s3sqs.state.store import open_store
    s3, sqs, bucket, q = bucket_with_history
    d = Controller(opts(moto_endpoint, bucket, q, tmp_path / "state"))
    d.open()
    status = lambda: read_status(Snapshots(open_store(str(tmp_path / "state"), s3)))  # noqa: E731
    d.backfill.start()  # published before the listing's thread starts
    assert status()["backfilling"] is True
    deadline = time.monotonic() + 300
    while d.backfill.running and time.monotonic() < deadline:
        time.sleep(0.2)
    after = status()
    assert after["backfilling"] is False and after["last_seq"] >= EXISTING
    d.close()
