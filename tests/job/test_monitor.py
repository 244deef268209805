"""The job's per-batch report: each batch Spark completed once, as a line and an EMF document."""
import io
import json

import pytest

from s3sqs.job.completion import Progress
from s3sqs.job.monitor import BatchMonitor, QueryFailed
from s3sqs.state.snapshots import Snapshots, read_status
from s3sqs.state.store import LocalStore


class FakeCheck:
    def __init__(self, root):
        self.state = Snapshots(LocalStore(str(root)))
        self.asked = []

    def problems(self, batch_end):
        self.asked.append(batch_end)
        return {"quarantined": 1 if batch_end == 20 else 0, "missing": 0, "malformed rows": 0}


def write_manifest(root, version, stats, batches):
    (root / "versions").mkdir(parents=True, exist_ok=True)
    (root / "versions" / f"{version:012d}.json").write_text(json.dumps(
        {"version": version, "sst": [], "small": [], "last_seq": 30, "stats": stats, "recent_batches": batches}))


def prog(batch_id, start, end, rows):
    return {"batchId": batch_id, "numInputRows": rows, "durationMs": {"triggerExecution": 1000},
            "sources": [{"startOffset": f'{{"seq":{start}}}', "endOffset": f'{{"seq":{end}}}'}]}


def test_each_batch_is_reported_once_with_what_happened_since_the_monitor_started(tmp_path):
    write_manifest(tmp_path, 1, {"duplicate": 100}, [])
    check, out = FakeCheck(tmp_path), io.StringIO()
    monitor = BatchMonitor(check, "https://sqs.us-east-1.amazonaws.com/123456789012/orders", out)
    write_manifest(tmp_path, 2, {"duplicate": 103}, [[0, 10, 500], [10, 20, 700]])
    state = Progress(5, 30, 20, 1, True, {"ApproximateNumberOfMessages": 5}, read_status(check.state))
    idle = {"batchId": 1, "numInputRows": 0, "sources": [{"startOffset": '{"seq":20}', "endOffset": '{"seq":20}'}]}
    monitor.report([prog(0, 0, 10, 10), prog(1, 10, 20, 0), idle], state)
    monitor.report([prog(0, 0, 10, 10), prog(1, 10, 20, 0), idle], state)  # nothing new: nothing printed
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and check.asked == [10, 20]
    assert lines[0].startswith("[job] batch 0: 10 files, 10 rows, 500 B in 1.0 s") and "3 duplicates" in lines[0]
    assert lines[2].startswith("[job] batch 1: 10 files, 0 rows, 700 B") and "1 quarantined" in lines[2]
    assert "duplicates" not in lines[2]  # the source's counters went to the first batch of the read
    emf = json.loads(lines[3])
    assert emf["QueueName"] == "orders" and emf["FilesQuarantined"] == 1 and emf["batchId"] == 1
    with pytest.raises(QueryFailed, match="boom"):
        monitor.watch(FailedQuery(), until_drained=False, idle_checks=1)
    assert json.loads(out.getvalue().splitlines()[-1])["QueryFailures"] == 1


class FailedQuery:
    """A query that has stopped with an error before the monitor looked."""
    isActive, recentProgress, lastProgress = False, [], None

    def exception(self):
        return "boom"
