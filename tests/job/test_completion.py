"""When is a run drained? Read from a checkpoint laid out as Spark writes it."""
import pytest

from s3sqs.core.vocabulary import FileStatus
from s3sqs.job.batch_line import batch_line
from s3sqs.job.completion import Progress
from s3sqs.job.metrics import batch_metrics, batch_range
from s3sqs.state.checkpoint import newest_batch
from s3sqs.state.store import LocalStore
from tests.support.checkpoint import log_batch


def test_newest_batch_reads_spark_offset_and_commit_logs(tmp_path):
    assert newest_batch(LocalStore(str(tmp_path))) == (None, None, False)
    log_batch(tmp_path, 0, 10, committed=True)
    log_batch(tmp_path, 1, 25, committed=False)
    for batch in (0, 1):
        (tmp_path / "offsets" / f".{batch}.crc").write_text("x")  # Spark's local checksum files are ignored
    assert newest_batch(LocalStore(str(tmp_path))) == (1, 25, False)
    log_batch(tmp_path, 1, 25, committed=True)
    assert newest_batch(LocalStore(str(tmp_path))) == (1, 25, True)


def test_a_foreign_offset_log_is_a_clear_error(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text('v1\n{}\n{"logOffset": 3}\n')
    with pytest.raises(ValueError, match="not an s3-sqs offset log"):
        newest_batch(LocalStore(str(tmp_path)))


@pytest.mark.parametrize("progress, drained, waiting", [
    (Progress(0, 0, None, None, False), True, "nothing"),                 # nothing ever announced
    (Progress(0, 25, 25, 1, True, {}, {"committed_seq": 25}), True, "nothing"),
    # Spark committed batch 1; the source records it (its commit marker, for the cleaner) at the next trigger.
    (Progress(0, 25, 25, 1, True, {}, {"committed_seq": 20}), False,
     "the source to record the commit of batch 1 (at the next trigger)"),
    (Progress(3, 25, 25, 1, True), False, "3 messages in the queue"),
    (Progress(0, 25, 25, 1, False), False, "batch 1 to be committed"),     # logged, never committed
    (Progress(0, 30, 25, 1, True), False, "files up to offset 30 to be planned (logged: 25)"),  # e.g. reprocess
    (Progress(0, 25, 25, 1, True, {}, {"backfilling": True}), False,
     "the backfill (a listing of basePath or an inventory report) to finish"),  # a listing still recording
])
def test_drained_needs_an_empty_queue_every_file_planned_and_the_last_batch_committed_and_marked(progress, drained,
                                                                                                   waiting):
    assert progress.drained is drained and str(progress) == waiting


@pytest.mark.parametrize("progress, settled, waiting", [
    (Progress(None, 25, 25, 1, True, {}, {"committed_seq": 25}), True, "the queue's depth to be read"),  # all else done
    (Progress(None, 25, 25, 1, False), False, "batch 1 to be committed"),
    (Progress(None, 30, 25, 1, True), False, "files up to offset 30 to be planned (logged: 25)"),
])
def test_a_reading_without_the_queue_is_never_drained(progress, settled, waiting):
    assert progress.settled is settled and not progress.drained and str(progress) == waiting


def test_the_batch_line_says_files_rows_bytes_speed_problems_costs_and_backlog():
    p = {"batchId": 4, "numInputRows": 12000, "durationMs": {"triggerExecution": 3000},
         "sources": [{"startOffset": {"seq": 100}, "endOffset": {"seq": 160}}]}
    assert batch_range(p) == (100, 160)
    assert batch_range({"sources": [{"startOffset": None, "endOffset": '{"seq":7}'}]}) == (0, 7)
    before = {"stats": {"duplicate": 10, "too_old": 1, "plan_ms": 500, "snapshots": 4, "snapshot_ms": 80}}
    now = {"stats": {"duplicate": 15, "too_old": 2, "glob_mismatch": 1, "messages_unparseable": 1, "plan_ms": 620,
                     "snapshots": 7, "snapshot_ms": 125},
           "recent_batches": [[40, 100, 1], [100, 160, 1258291]]}
    depth = {"ApproximateNumberOfMessages": 40, "ApproximateNumberOfMessagesNotVisible": 2,
             "ApproximateNumberOfMessagesDelayed": 0}
    m = batch_metrics(p, before, now, {FileStatus.QUARANTINED: 1, FileStatus.MISSING: 0, FileStatus.MALFORMED_ROWS: 3}, depth, 200, 160)
    assert batch_line(m) == (
        "[job] batch 4: 60 files, 12,000 rows, 1.2 MiB in 3.0 s (4,000 rows/s); 1 quarantined, 3 malformed rows; "
        "skipped since the last batch: 5 duplicates, 2 filtered, 1 unparseable messages; planning 120 ms, "
        "snapshots: 3 in 45 ms; backlog: 42 messages (40 visible, 2 in flight), 40 files recorded and not yet planned")


def test_a_slow_batch_reads_as_a_fraction_not_zero_rows_per_second():
    from s3sqs.job.batch_line import rate
    assert rate(2, 4.3, "rows") == "0.5 rows/s" and rate(0, 4.3, "rows") == "0 rows/s"
    assert rate(12000, 3.0, "rows") == "4,000 rows/s" and rate(5, 0, "rows") == "-"
