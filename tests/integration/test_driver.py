"""The driver-side protocol against a real moto server and real RocksDB, without Spark."""
import time

import pytest

from s3sqs.driver import Driver, Limit, ReprocessDryRunComplete
from s3sqs.options import parse_options
from tests.support.aws import bucket_to_queue

ALL = Limit(None, None)


def make_driver(w, state, **extra):
    opts = {"fileFormat": "csv", "queueUrl": w.queue_url, "stateLocation": str(state), "endpointUrl": w.endpoint,
            "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1", "queueFetchWaitTimeoutSeconds": "3"}
    opts.update(extra)
    return Driver(parse_options(opts))


def close(d):
    d.index.db.close()


def test_messages_are_deleted_only_after_commit_and_duplicates_ignored(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for k in ("a.csv", "dir one/b+c.csv", "a.csv"):  # the second a.csv is a duplicate announcement
        w.put(k, b"x\n1\n")
    w.send_raw("this is not an S3 event")
    d = make_driver(w, tmp_path / "state")
    end = d.latest_offset(0, ALL)
    assert end == 2
    assert sorted(r.key for r in d.files_between(0, end)) == ["a.csv", "dir one/b+c.csv"]
    assert w.depth() == 3  # three file messages in flight; the test event and the junk are gone
    assert d.index.stats["duplicate"] == 1 and d.index.stats["messages_unparseable"] == 1
    assert d.latest_offset(end, ALL) == end  # the next batch starts at `end`: that commits it
    assert w.depth() == 0
    close(d)


def test_restart_replays_the_same_files_and_dedups_redelivered_messages(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for i in range(5):
        w.put(f"f{i}.csv", b"x\n1\n")
    d1 = make_driver(w, tmp_path / "state", **{"sqs.visibilityTimeoutSeconds": "2", "maxFilesPerTrigger": "3"})
    end = d1.latest_offset(0, Limit(3, None))
    planned = [r.key for r in d1.files_between(0, end)]
    assert end == 3 and len(planned) == 3
    close(d1)  # crash: nothing acknowledged, receipt handles lost
    d1.inflight._stop.set()

    time.sleep(2.5)  # the messages become visible again
    d2 = make_driver(w, tmp_path / "state", **{"sqs.visibilityTimeoutSeconds": "2", "maxFilesPerTrigger": "3"})
    assert [r.key for r in d2.files_between(0, 3)] == planned  # replay: exactly the same files
    assert d2.latest_offset(3, Limit(3, None)) == 5  # nothing re-numbered, nothing lost
    assert d2.index.last_seq == 5 and d2.index.stats["duplicate"] >= 5
    d2.latest_offset(5, Limit(3, None))
    assert w.depth() == 0
    close(d2)


def test_unparseable_message_is_kept_for_the_dlq_when_asked(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint, max_receive_count=2)
    w.send_raw('{"not": "an event"}')
    d = make_driver(w, tmp_path / "state", **{"sqs.keepMessageForConsumerError": "true",
                                              "sqs.visibilityTimeoutSeconds": "1"})
    d.open()
    for _ in range(3):
        d.latest_offset(d.index.committed_seq, ALL)
        time.sleep(1.2)
    dlq = w.sqs.receive_message(QueueUrl=w.dlq_url, WaitTimeSeconds=2).get("Messages", [])
    assert [m["Body"] for m in dlq] == ['{"not": "an event"}']
    close(d)


def test_spark40_style_calls_enforce_max_files_from_planned_batches(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for i in range(7):
        w.put(f"g{i}.csv", b"x\n1\n")
    d = make_driver(w, tmp_path / "state", maxFilesPerTrigger="3")
    limit = Limit(3, None)
    first = d.latest_offset(None, limit)
    assert first == 3 and d.latest_offset(None, limit) == 3  # extra calls are harmless
    d.files_between(0, first)
    assert d.latest_offset(None, limit) == 6
    d.files_between(3, 6)
    assert d.latest_offset(None, limit) == 7
    close(d)


def test_reprocess_dry_run_lists_and_real_run_requeues(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for i in range(4):
        w.put(f"r{i}.csv", b"x\n1\n")
    d = make_driver(w, tmp_path / "state", maxFilesPerTrigger="2")
    d.files_between(0, d.latest_offset(0, Limit(2, None)))
    d.files_between(2, d.latest_offset(2, Limit(2, None)))
    d.latest_offset(4, Limit(2, None))
    close(d)
    dry = make_driver(w, tmp_path / "state", reprocessStartBatchId="1", reprocessEndBatchId="1",
                      reprocessDryRun="true")
    with pytest.raises(ReprocessDryRunComplete, match="batches 1..1 hold 2 files"):
        dry.open()
    close(dry)
    real = make_driver(w, tmp_path / "state", reprocessStartBatchId="1", reprocessEndBatchId="1")
    assert real.latest_offset(4, ALL) == 6
    assert [r.key for r in real.files_between(4, 6)] == ["r2.csv", "r3.csv"]
    close(real)
    again = make_driver(w, tmp_path / "state", reprocessStartBatchId="1", reprocessEndBatchId="1")
    assert again.latest_offset(6, ALL) == 6  # a restart does not re-queue them twice
    close(again)
