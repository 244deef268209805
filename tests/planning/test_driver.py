"""The driver-side protocol against a real moto server and real RocksDB, without Spark."""
import shutil
import threading
import time

import pytest

from s3sqs.core.errors import StateError
from s3sqs.planning.controller import Controller
from s3sqs.planning.reprocess import ReprocessDryRunComplete
from s3sqs.config.options import parse_options
from s3sqs.planning.batch_limits import Limit
from tests.support.aws import bucket_to_queue

ALL = Limit(None, None)


def make_driver(w, state, **extra):
    opts = {"fileFormat": "csv", "queueUrl": w.queue_url, "stateLocation": str(state), "endpointUrl": w.endpoint,
            "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1", "queueFetchWaitTimeoutSeconds": "3"}
    opts.update(extra)
    d = Controller(parse_options(opts))
    d.open()
    return d


def drain(d):
    """What the intake does in the background, here in the foreground until the queue is empty."""
    while msgs := d.intake.queue.receive_round(5, 1):
        d.intake.ingest(msgs)


def announced(moto_endpoint, tmp_path, n: int, name: str, **options):
    """n small CSV files announced on a fresh queue, and a controller that has recorded them all."""
    w = bucket_to_queue(moto_endpoint)
    w.put_many({f"{name}{i}.csv": b"x\n1\n" for i in range(n)})
    d = make_driver(w, tmp_path / "state", **options)
    drain(d)
    return w, d


def close(d):
    d.close()


def test_files_are_durable_before_their_messages_are_deleted(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for k in ("a.csv", "dir one/b+c.csv", "a.csv"):  # the second a.csv is a duplicate announcement
        w.put(k, b"x\n1\n")
    w.send_raw("this is not an S3 event")
    d = make_driver(w, tmp_path / "state")
    drain(d)
    assert w.depth() == 0  # every message settled: files recorded, test event and junk logged and gone
    close(d)
    restarted = make_driver(w, tmp_path / "state")  # a crash here loses nothing: the index is durable
    assert restarted.index.last_seq == 2
    assert restarted.index.stats["duplicate"] == 1 and restarted.index.stats["messages_unparseable"] == 1
    end = restarted.latest_offset(0, ALL)
    assert end == 2 and sorted(r.key for r in restarted.files_between(0, end)) == ["a.csv", "dir one/b+c.csv"]
    close(restarted)


def test_restart_replays_the_same_files_and_dedups_announcements_again(moto_endpoint, tmp_path):
    w, d1 = announced(moto_endpoint, tmp_path, 5, "f", maxFilesPerTrigger="3")
    end = d1.latest_offset(0, Limit(3, None))
    planned = [r.key for r in d1.files_between(0, end)]
    assert end == 3 and len(planned) == 3
    close(d1)  # crash after the offset was returned

    for i in range(5):
        w.put(f"f{i}.csv", b"x\n1\n")  # announced again, as at-least-once delivery may
    d2 = make_driver(w, tmp_path / "state", maxFilesPerTrigger="3")
    assert [r.key for r in d2.files_between(0, 3)] == planned  # replay: exactly the same files
    drain(d2)
    assert d2.latest_offset(3, Limit(3, None)) == 5  # nothing re-numbered, nothing lost
    assert d2.index.last_seq == 5 and d2.index.stats["duplicate"] >= 5
    assert d2.latest_offset(5, Limit(3, None)) == 5 and w.depth() == 0
    close(d2)


def test_unparseable_message_is_kept_for_the_dlq_when_asked(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint, max_receive_count=2)
    w.send_raw('{"not": "an event"}')
    d = make_driver(w, tmp_path / "state", **{"sqs.keepMessageForConsumerError": "true",
                                              "sqs.visibilityTimeoutSeconds": "1"})
    for _ in range(3):
        d.intake.ingest(d.intake.queue.receive_round(1, 1))
        time.sleep(1.2)
    dlq = w.sqs.receive_message(QueueUrl=w.dlq_url, WaitTimeSeconds=2).get("Messages", [])
    assert [m["Body"] for m in dlq] == ['{"not": "an event"}']
    close(d)


def test_a_good_file_is_safe_while_batches_fail(moto_endpoint, tmp_path):
    """Runs that fail before their batch commits must not push a good file's message to the DLQ."""
    w = bucket_to_queue(moto_endpoint, max_receive_count=2)
    w.put("keys/a+b.parquet", b"PAR1")
    for run in range(3):  # each run receives, then dies with its batch uncommitted
        d = make_driver(w, tmp_path / "state", **{"sqs.visibilityTimeoutSeconds": "1"})
        drain(d)
        assert d.latest_offset(0, ALL) == 1
        close(d)
        time.sleep(1.2)
    assert w.sqs.receive_message(QueueUrl=w.dlq_url, WaitTimeSeconds=1).get("Messages") is None
    d = make_driver(w, tmp_path / "state")
    assert [f.key for f in d.files_between(0, 1)] == ["keys/a+b.parquet"]
    close(d)


def test_spark40_style_calls_enforce_max_files_from_planned_batches(moto_endpoint, tmp_path):
    w, d = announced(moto_endpoint, tmp_path, 7, "g", maxFilesPerTrigger="3")
    limit = Limit(3, None)
    first = d.latest_offset(None, limit)
    assert first == 3 and d.latest_offset(None, limit) == 3  # extra calls are harmless
    d.files_between(0, first)
    assert d.latest_offset(None, limit) == 6
    d.files_between(3, 6)
    assert d.latest_offset(None, limit) == 7
    assert d.index.batches() == [(0, 3), (3, 6), (6, 7)]  # what Spark read is recorded by the next plan
    close(d)


def test_reprocess_dry_run_lists_and_real_run_requeues(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for i in range(4):
        w.put(f"r{i}.csv", b"x\n1\n")
    d = make_driver(w, tmp_path / "state", maxFilesPerTrigger="2")
    drain(d)
    d.files_between(0, d.latest_offset(0, Limit(2, None)))
    batch1 = [r.key for r in d.files_between(2, d.latest_offset(2, Limit(2, None)))]  # in the order received
    d.latest_offset(4, Limit(2, None))
    close(d)
    dry = make_driver(w, tmp_path / "state", reprocessStartBatchId="1", reprocessEndBatchId="1",
                      reprocessDryRun="true")
    with pytest.raises(ReprocessDryRunComplete, match="batches 1..1 hold 2 files"):
        dry.initial_offset()
    close(dry)
    real = make_driver(w, tmp_path / "state", reprocessStartBatchId="1", reprocessEndBatchId="1")
    assert real.latest_offset(4, ALL) == 6
    assert [r.key for r in real.files_between(4, 6)] == batch1
    close(real)
    again = make_driver(w, tmp_path / "state", reprocessStartBatchId="1", reprocessEndBatchId="1")
    assert again.latest_offset(6, ALL) == 6  # a restart does not re-queue them twice
    close(again)


def test_terminate_hands_back_the_messages_of_the_receive_under_way(moto_endpoint, tmp_path):
    """Spark stops a query's source with SIGTERM. The messages its last receive got must be visible again at
    once for the next run, not after their visibility timeout, and nothing more may be recorded."""
    w = bucket_to_queue(moto_endpoint)
    d = make_driver(w, tmp_path / "state", **{"sqs.longPollingWaitTimeSeconds": "5"})
    d.intake.start()
    assert d.intake.caught_up.wait(10)  # the queue is empty: the intake now long-polls
    time.sleep(0.5)
    stopper = threading.Thread(target=d.terminate)
    stopper.start()  # waits for the long poll under way
    while not d.intake.stopping.is_set():
        time.sleep(0.01)
    w.put("late.csv", b"x\n1\n")  # which returns this message
    stopper.join(15)
    assert not stopper.is_alive() and d.index.last_seq == 0
    visible = w.sqs.get_queue_attributes(QueueUrl=w.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
    assert visible["Attributes"]["ApproximateNumberOfMessages"] == "1"
    with pytest.raises(StateError, match="stopping"):
        d.ledger.record([], {}, {"k": b"v"})
    d.ledger.close()
    nxt = make_driver(w, tmp_path / "state")
    drain(nxt)
    assert nxt.index.last_seq == 1 and [r.key for r in nxt.files_between(0, 1)] == ["late.csv"]
    close(nxt)


def _plan(d, start: int, limit: Limit, spark40: bool = False) -> int:
    """latestOffset as Spark 4.2+ calls it (with the start), or as Spark 4.0 does: without it, and at times
    twice for one batch."""
    if not spark40:
        return d.latest_offset(start, limit)
    end = d.latest_offset(None, limit)
    assert d.latest_offset(None, limit) == end
    return end


def _run_batches(d, start: int, limit: Limit, until: int, spark40: bool = False) -> list[list[str]]:
    """Plan, read and commit batches as Spark would, from `start` until offset `until`; the keys of each."""
    out = []
    while start < until:
        end = _plan(d, start, limit, spark40)
        assert end > start
        out.append([f.key for f in d.files_between(start, end)])
        d.commit(end)
        start = end
    return out


def _index_is_consistent(d):
    """Every record's dedup entry and age entry name its own seq (what renumbering must keep)."""
    from s3sqs.core.files import dedup_key
    idx = d.index
    for seq in range(1, idx.last_seq + 1):
        rec = idx.record(seq)
        assert rec is not None and rec.seq == seq and idx.seq_of(dedup_key(rec, False)) == seq
    assert sum(1 for _ in idx.seqs_since(0)) == idx.last_seq


@pytest.mark.parametrize("latest_first, spark40", [(True, False), (True, True), (False, False)])
def test_latest_first_takes_fresh_files_ahead_of_the_backlog_and_loses_none(moto_endpoint, tmp_path, latest_first,
                                                                            spark40):
    opts = {"maxFilesPerTrigger": "12", "latestFirst": str(latest_first).lower()}
    w, d = announced(moto_endpoint, tmp_path, 60, "old", **opts)
    limit = Limit(12, None)
    first = _run_batches(d, 0, limit, 12, spark40)
    for i in range(3):  # fresh files announced while the backlog drains
        w.put(f"fresh{i}.csv", b"x\n1\n")
    drain(d)
    second = _plan(d, 12, limit, spark40)
    fresh_batch = [f.key for f in d.files_between(12, second)]
    _index_is_consistent(d)
    close(d)  # a crash after the plan: the restarted source replays the same files
    d = make_driver(w, tmp_path / "state", **opts)
    assert [f.key for f in d.files_between(12, second)] == fresh_batch
    d.commit(second)
    rest = _run_batches(d, second, limit, d.index.last_seq, spark40)
    batches = first + [fresh_batch] + rest
    keys = [k for b in batches for k in b]
    assert sorted(keys) == sorted([f"old{i}.csv" for i in range(60)] + [f"fresh{i}.csv" for i in range(3)])
    fresh_at = sorted(i for i, b in enumerate(batches) for k in b if k.startswith("fresh"))
    if latest_first:
        assert fresh_at == [1, 1, 1] and len(batches) == 6  # the next batch, beside 9 of the backlog
    else:
        assert fresh_at[0] >= 4  # behind the whole backlog
    _index_is_consistent(d)
    assert w.depth() == 0
    close(d)


def test_latest_first_keeps_files_announced_between_spark40s_repeated_calls(moto_endpoint, tmp_path):
    """Spark 4.0 may ask for the latest offset again before it reads the batch: files announced in between
    are still fresh at the next plan."""
    w, d = announced(moto_endpoint, tmp_path, 40, "old", maxFilesPerTrigger="10", latestFirst="true")
    limit = Limit(10, None)
    first = d.latest_offset(None, limit)
    w.put_many({f"fresh{i}.csv": b"x\n1\n" for i in range(3)})
    drain(d)
    assert d.latest_offset(None, limit) == first  # the same batch, asked for again
    d.files_between(0, first)
    d.commit(first)
    second = d.latest_offset(None, limit)
    assert sorted(f.key for f in d.files_between(first, second) if f.key.startswith("fresh")) == \
        ["fresh0.csv", "fresh1.csv", "fresh2.csv"]
    close(d)


def test_no_message_is_deleted_after_a_snapshot_fails(moto_endpoint, tmp_path):
    """Rounds are made durable and deleted off the intake's thread: a failed snapshot stops every delete
    after it (a later round's duplicates included), and the next offset call names the cause."""
    w = bucket_to_queue(moto_endpoint)
    w.put_many({f"s{i}.csv": b"x\n1\n" for i in range(3)})
    state = tmp_path / "state"
    d = make_driver(w, state)
    msgs = d.intake.queue.receive_round(5, 1)
    assert len(msgs) == 3
    shutil.rmtree(state, ignore_errors=True)  # (made at the first snapshot, if any yet)
    state.write_text("not a directory")  # every write to the state location fails from here on
    d.intake.ingest(msgs)
    d.intake._deleter.submit(lambda: None).result(timeout=30)  # the round is settled, or not
    assert isinstance(d.intake.error, OSError) and w.depth() == 3
    with pytest.raises(OSError):
        d.latest_offset(0, ALL)
    d.intake._deleter.submit(d.intake._settle, msgs, False).result(timeout=30)  # a later round: nothing goes
    assert w.depth() == 3
    close(d)


def test_a_round_recorded_as_the_process_ends_keeps_its_messages(moto_endpoint, tmp_path):
    """Sealed (SIGTERM) between recording a round and its snapshot: no snapshot, no delete; the next run gets
    the messages again after their visibility timeout and records the files then."""
    w = bucket_to_queue(moto_endpoint)
    w.put_many({f"t{i}.csv": b"x\n1\n" for i in range(2)})
    d = make_driver(w, tmp_path / "state", **{"sqs.visibilityTimeoutSeconds": "1"})
    gate = threading.Event()
    d.intake._deleter.submit(gate.wait, 30)  # holds the delete thread until the ledger is sealed
    d.intake.ingest(d.intake.queue.receive_round(5, 1))
    d.ledger.seal()
    gate.set()
    d.intake._deleter.submit(lambda: None).result(timeout=30)
    assert w.depth() == 2 and d.intake.error is None
    close(d)
    time.sleep(1.2)
    again = make_driver(w, tmp_path / "state")
    assert again.index.last_seq == 0  # nothing of the sealed round was saved
    drain(again)
    assert again.index.last_seq == 2 and w.depth() == 0
    close(again)


def test_on_spark_4_0_a_restart_plans_past_a_batch_spark_committed_that_the_source_never_heard_of(moto_endpoint,
                                                                                                    tmp_path):
    """Spark 4.0 gives latestOffset no start, and tells the source of a commit only when it plans the next batch.
    A run killed (or stopped) between Spark's commit of (0, 2] and that next plan leaves the source at committed 0
    while Spark is at 2. Planning from 0 again with a limit of 2 files answered 2, which Spark took for no new
    data, at every trigger: the stream stood still. The source plans from the end it last made durable, and
    acknowledges nothing Spark has not said it committed."""
    w, d1 = announced(moto_endpoint, tmp_path, 5, "g", maxFilesPerTrigger="2")
    assert d1.latest_offset(None, Limit(2, None)) == 2
    first = {r.key for r in d1.files_between(0, 2)}  # Spark reads batch 0, commits it; the run ends before its next plan
    close(d1)

    d2 = make_driver(w, tmp_path / "state", maxFilesPerTrigger="2")
    assert d2.index.committed_seq == 0
    assert d2.latest_offset(None, Limit(2, None)) == 4  # past Spark's committed 2: a batch Spark will run
    assert d2.index.committed_seq == 0  # not acknowledged on a guess: Spark says it with commit(2)
    second = {r.key for r in d2.files_between(2, 4)}
    assert len(second) == 2 and not first & second
    d2.commit(2)
    assert d2.index.committed_seq == 2
    close(d2)
