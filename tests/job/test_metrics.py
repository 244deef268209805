"""Per-batch figures from Spark's progress and the source's status, and the EMF document CloudWatch reads."""
import json

import pytest

from s3sqs.job.batch_line import batch_line

from s3sqs.config.options import name_in_queue_url
from s3sqs.core.vocabulary import FileStatus
from s3sqs.job import metrics
from s3sqs.job.metrics import BatchMetrics, batch_metrics, emf_document, failure_document, offset_seq

DEPTH = {"ApproximateNumberOfMessages": 7, "ApproximateNumberOfMessagesNotVisible": 3,
         "ApproximateNumberOfMessagesDelayed": 1}


def progress(batch_id=2, start=10, end=25, rows=300, ms=1500):
    return {"batchId": batch_id, "numInputRows": rows, "durationMs": {"triggerExecution": ms},
            "sources": [{"startOffset": {"seq": start}, "endOffset": {"seq": end}}]}


@pytest.mark.parametrize("value, seq", [
    ({"seq": 5}, 5), ('{"seq": 5}', 5),
    ("{'seq': 5}", 5),          # PySpark 4.0's progress: the Python repr of the parsed JSON
    (None, None), ("None", None), ("not an offset", None), ({"other": 1}, None),
])
def test_offsets_are_read_in_every_form_spark_shows_them(value, seq):
    assert offset_seq(value) == seq


def test_a_batch_is_its_offsets_rows_and_what_the_source_did_since_the_last_report():
    before = {"stats": {"duplicate": 2, "too_old": 1, "glob_mismatch": 0, "messages_unparseable": 0,
                        "plan_ms": 100, "snapshots": 3, "snapshot_ms": 30, "new": 10}}
    now = {"stats": {"duplicate": 6, "too_old": 2, "glob_mismatch": 3, "messages_unparseable": 2,
                     "plan_ms": 145, "snapshots": 5, "snapshot_ms": 52, "new": 25},
           "recent_batches": [[0, 10, 999], [10, 25, 4096]]}
    m = batch_metrics(progress(), before, now, {FileStatus.QUARANTINED: 1, FileStatus.MISSING: 2,
                                                            FileStatus.MALFORMED_ROWS: 4, FileStatus.NEW_COLUMNS: 3,
                                                            "first_reason": "s3://b/k: column 'a'"}, DEPTH,
                      recorded=40, logged=25)
    assert m == BatchMetrics(batch_id=2, start=10, end=25, files=15, bytes=4096, rows=300, batch_ms=1500,
                             duplicates=4, filtered=4, unparseable=2, planning_ms=45, snapshots=2, snapshot_ms=22,
                             quarantined=1, missing=2, malformed_rows=4, new_columns=3, visible=7, in_flight=3,
                             delayed=1, pending_files=15, first_reason="s3://b/k: column 'a'")
    line = batch_line(m)
    assert "3 files with columns the schema lacks (first: s3://b/k: column 'a')" in line


def test_unknown_bytes_stay_unknown_and_counters_never_go_backwards():
    m = batch_metrics(progress(), {"stats": {"duplicate": 9}}, {"stats": {"duplicate": 4}}, {}, {}, 25, None)
    assert m.bytes is None and m.duplicates == 0 and m.pending_files == 25
    doc = emf_document(m, "orders", 1_700_000_000_000)
    assert metrics.BYTES_IN not in doc and all(d["Name"] != metrics.BYTES_IN
                                               for d in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"])


def test_idle_triggers_are_not_batches():
    assert not metrics.is_batch({"batchId": 3, "numInputRows": 0, "sources": [
        {"startOffset": '{"seq":9}', "endOffset": '{"seq":9}'}]})
    assert metrics.is_batch(progress(rows=0))  # files that all failed to read are still a batch


def test_the_emf_document_names_every_metric_with_its_unit_under_the_queue_dimension():
    m = batch_metrics(progress(), {}, {"recent_batches": [[10, 25, 2048]]}, {"quarantined": 1}, DEPTH, 30, 25)
    doc = emf_document(m, "S3SqsStreaming-ingest", 1_700_000_000_000)
    directive = doc["_aws"]["CloudWatchMetrics"][0]
    assert doc["_aws"]["Timestamp"] == 1_700_000_000_000
    assert directive["Namespace"] == "S3SqsStreaming" and directive["Dimensions"] == [["QueueName"]]
    assert doc["QueueName"] == "S3SqsStreaming-ingest"
    units = {d["Name"]: d["Unit"] for d in directive["Metrics"]}
    assert units == {name: unit for name, (unit, _) in metrics.BATCH_METRICS.items()}
    assert all(isinstance(doc[name], int) for name in units)  # each declared metric has its value at the root
    assert (doc["FilesIn"], doc["BytesIn"], doc["RowsIn"], doc["FilesQuarantined"]) == (15, 2048, 300, 1)
    line = metrics.emf_line(doc)
    assert "\n" not in line and json.loads(line) == doc


def test_a_failed_query_is_one_query_failure():
    doc = failure_document("orders", 5)
    assert doc["QueryFailures"] == 1 and doc["_aws"]["CloudWatchMetrics"][0]["Metrics"] == [
        {"Name": "QueryFailures", "Unit": "Count"}]


@pytest.mark.parametrize("url, name", [
    ("https://sqs.eu-west-1.amazonaws.com/123456789012/S3SqsStreaming-ingest", "S3SqsStreaming-ingest"),
    ("http://127.0.0.1:5000/123456789012/t-abc/", "t-abc"),
])
def test_the_dimension_is_the_queue_name(url, name):
    assert name_in_queue_url(url) == name
