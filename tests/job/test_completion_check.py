"""The job's loop asks the queue only when its answer can matter (CompletionCheck.when_needed), against a
real moto server and a checkpoint laid out as Spark writes it."""
from __future__ import annotations

from s3sqs.config.options import parse_options
from s3sqs.job.completion import CompletionCheck
from tests.support.aws import bucket_to_queue
from tests.support.checkpoint import log_batch


def test_the_queue_is_asked_only_for_a_batch_to_report_or_once_all_else_says_done(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    opts = parse_options({"fileFormat": "csv", "queueUrl": w.queue_url, "stateLocation": str(tmp_path / "state"),
                          "endpointUrl": w.endpoint, "queueRegion": "us-east-1"})
    ck = tmp_path / "ck"
    check = CompletionCheck(opts, str(ck))
    asked = lambda: check.queue.calls["GetQueueAttributes"]  # noqa: E731

    # A stream without an end, between batches: nothing is read.
    assert check.when_needed(new_batches=False, until_drained=False) is None and asked() == 0

    # Batch 0 logged and not committed: no depth can make the run drained, so the queue is not asked.
    log_batch(ck, 0, 0, committed=False)
    state = check.when_needed(new_batches=False, until_drained=True)
    assert asked() == 0 and state.queued is None and not state.drained
    assert str(state) == "batch 0 to be committed"

    # A batch to report: its line gives the backlog, so the queue is asked, whatever else says.
    w.send_raw("not an S3 event")
    state = check.when_needed(new_batches=True, until_drained=False)
    assert asked() == 1 and state.queued == 1 and state.depth["ApproximateNumberOfMessages"] == 1

    # Committed: only the queue can say whether the run is done; it is asked, and holds a message.
    log_batch(ck, 0, 0, committed=True)
    state = check.when_needed(new_batches=False, until_drained=True)
    assert asked() == 2 and state.queued == 1 and not state.drained
    assert str(state) == "1 messages in the queue"

    w.sqs.purge_queue(QueueUrl=w.queue_url)
    state = check.when_needed(new_batches=False, until_drained=True)
    assert asked() == 3 and state.queued == 0 and state.drained

