"""The job on moto with --format json: a CSV file among the JSON files is quarantined with the reason and a
copy, its rows are not in the sink, the job goes on and ends well; the malformed rows of a mixed file are in
the sink and in the RowsMalformed figure of the EMF documents the job logs (what the stack's alarm reads)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from devtools.committed import committed_rows
from devtools.local_spark import ROOT, job_command, job_env
from s3sqs.core import layout
from s3sqs.job.metrics import MALFORMED, NAMESPACE, QUARANTINED
from s3sqs.state.view import files_table
from tests.support.aws import bucket_to_queue
from tests.support.spark import Job, only_on_emr_spark

pytestmark = pytest.mark.spark

CSV = b"id,name\n1,a\n2,b\n"
MIXED = b'{"id": 3, "name": "c"}\n{"id": "x", "name": "d"}\nnot json\n'


def emf_documents(log: str) -> list[dict]:
    """The EMF documents among the job's log lines."""
    docs = [json.loads(line) for line in log.splitlines() if line.startswith('{"_aws"')]
    return [d for d in docs if d["_aws"]["CloudWatchMetrics"][0]["Namespace"] == NAMESPACE]


@only_on_emr_spark  # version-independent: once, on the Spark EMR runs
def test_a_wrong_format_file_is_quarantined_and_malformed_rows_are_a_metric(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/orders.csv", CSV)
    w.put("in/mixed.json", MIXED)
    w.put("in/good.json", b'{"id": 5, "name": "e"}\n')
    ck, out = tmp_path / "ck", tmp_path / "out"
    args = ["--queue-url", w.queue_url, "--format", "json", "--schema", "id LONG, name STRING", "--checkpoint",
            str(ck), "--output", str(out), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1"]
    log = Job.run(args, tmp_path / "run.log")

    # The sink has the JSON files' rows, the mixed file's malformed ones with nulls, and none of the CSV file.
    assert sorted(committed_rows(out, ["id", "name"]), key=str) == sorted(
        [(3, "c"), (None, "d"), (None, None), (5, "e")], key=str)

    # Set aside as any bad file is: its record says why, its copy is beside it, the state shows it.
    batches = Path(layout.quarantine_location(str(ck))) / "batches"
    by_file = {r["file"].rsplit("/", 1)[-1]: r for r in (json.loads(p.read_text()) for p in batches.rglob("*.json"))}
    set_aside = by_file["orders.csv"]
    assert set_aside["status"] == "quarantined"
    assert "not json as declared: every one of its 3 rows is malformed" in set_aside["error"]
    assert "multiLine=false; the first: record 1: not JSON" in set_aside["error"]
    assert Path(set_aside["copy"]).read_bytes() == CSV
    assert by_file["mixed.json"]["status"] == "malformed_rows" and by_file["mixed.json"]["malformed_rows"] == 2
    (row,) = files_table(checkpoint=str(ck), status="quarantined").to_pylist()
    assert row["uri"] == f"s3://{w.bucket}/in/orders.csv" and row["quarantine_copy"] == set_aside["copy"]

    # What CloudWatch would count: the batches' figures, summed as the alarms sum them over a period.
    docs = emf_documents(log)
    assert docs and all(d["QueueName"] == w.queue_url.rsplit("/", 1)[-1] for d in docs)
    assert sum(d.get(MALFORMED, 0) for d in docs) == 2 and sum(d.get(QUARANTINED, 0) for d in docs) == 1

    # And it can be read again, as any quarantined file: a reprocess of its batch takes it.
    batch = row["batch_id"]
    dry = subprocess.run(job_command(*args, "--option", f"reprocessStartBatchId={batch}", "--option",
                                     f"reprocessEndBatchId={batch}", "--option", "reprocessDryRun=true"),
                         env=job_env(), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert f"s3://{w.bucket}/in/orders.csv" in dry.stdout
