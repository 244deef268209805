"""The job's honest ending: a failed query exits non-zero with its cause, and --until-drained only says
done when every logged batch has its commit."""
import subprocess

import pytest

from devtools.local_spark import ROOT, job_command, job_env
from devtools.committed import committed_rows
from s3sqs.state import markers
from s3sqs.state.store import LocalStore
from tests.support.aws import bucket_to_queue
from tests.support.spark import Job, only_on_newest_spark

pytestmark = pytest.mark.spark


@only_on_newest_spark  # version-independent: once, in the lane that ends first
def test_a_failed_batch_is_never_reported_as_drained_and_the_rerun_finishes_it(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    w.put("in/good.csv", b"1\n2\n")
    w.put("in/broken.csv.gz", b"\x1f\x8b not really gzip")
    ck, out = tmp_path / "ck", tmp_path / "out"
    args = ["--queue-url", w.queue_url, "--format", "csv", "--schema", "id LONG", "--checkpoint", str(ck),
            "--output", str(out), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2",
            "--option", "sqs.longPollingWaitTimeSeconds=1"]

    failing = Job(args + ["--option", "onBadFile=fail"], tmp_path / "run1.log")
    try:
        assert failing.wait(timeout=300) == 1, failing.tail()
    finally:
        failing.kill()
    log = (tmp_path / "run1.log").read_text(errors="replace")
    assert "job.py: the query failed" in log and "broken.csv.gz" in log and "onBadFile=quarantine" in log
    assert "queue drained" not in log
    assert (ck / "offsets" / "0").exists() and not (ck / "commits" / "0").exists()
    assert w.depth() == 0  # the messages are gone (their files are in the index): the queue alone would lie

    rerun = Job(args, tmp_path / "run2.log")  # quarantine, the default, lets the batch through
    try:
        assert rerun.wait(timeout=300) == 0, rerun.tail()
    finally:
        rerun.kill()
    assert (ck / "commits" / "0").exists()
    assert sorted(committed_rows(out, ["id"])) == [(1,), (2,)]
    assert "[job] batch 0: 2 files, 2 rows" in (tmp_path / "run2.log").read_text() and "1 quarantined" in \
        (tmp_path / "run2.log").read_text()
    # Its commit marker, for the source cleaner: the file read cleanly, not the one set aside.
    (marker,) = markers.read_all(LocalStore(str(ck / "source-state")))
    assert [(f.bucket, f.key) for f in marker.files] == [(w.bucket, "in/good.csv")]

    dry = subprocess.run(job_command(*args, "--option", "reprocessStartBatchId=0", "--option",
                                     "reprocessEndBatchId=0", "--option", "reprocessDryRun=true"),
                         env=job_env(), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert f"s3://{w.bucket}/in/good.csv" in dry.stdout and "batches 0..0 hold 2 files" in dry.stdout


def test_a_drained_multi_batch_run_records_every_batch_s_commit_before_it_exits(moto_endpoint, tmp_path):
    """Spark tells the source of a commit only at the next trigger: a run that stopped at Spark's last commit left
    that batch out of the commit markers, so the source cleaner could not clean its files until the next run. With
    the default 5 s trigger, the run stops only once the source has recorded every batch Spark committed."""
    import boto3

    from s3sqs.cleaning.cleaner import Cleaner, ConsumerMarkers
    from s3sqs.cleaning.rule import Consumer
    from s3sqs.config.clean import parse_clean_settings
    from s3sqs.core.vocabulary import CleanStatus
    from s3sqs.state.store import S3Store

    w = bucket_to_queue(moto_endpoint)
    keys = [f"in/part-{i}.csv" for i in range(5)]
    for i, key in enumerate(keys):
        w.put(key, f"{i}\n".encode())
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    checkpoints = f"ck-{w.bucket}"
    s3.create_bucket(Bucket=checkpoints)
    state = f"s3://{checkpoints}/checkpoints/orders/source-state"
    args = ["--queue-url", w.queue_url, "--format", "csv", "--schema", "id LONG", "--checkpoint", str(tmp_path / "ck"),
            "--output", str(tmp_path / "out"), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--state-location", state, "--until-drained", "--idle-checks", "2",
            "--option", "maxFilesPerTrigger=2", "--option", "sqs.longPollingWaitTimeSeconds=1"]
    log = Job.run(args, tmp_path / "run.log")
    assert "[job] batch 2: 1 files, 1 rows" in log, log[-3000:]
    assert sorted(committed_rows(tmp_path / "out", ["id"])) == [(i,) for i in range(5)]

    rows = []
    cleaner = Cleaner(s3, parse_clean_settings({"cleanSource": "delete", "cleanSourceRetention": "1d"}), w.bucket,
                      [ConsumerMarkers(Consumer("orders", "in/"), S3Store(state, s3))],
                      S3Store(f"s3://{checkpoints}/source-cleaning", s3), progress_seconds=0)
    cleaner.run(False, on_row=rows.append)  # a dry run, at once
    assert {r.key: r.status for r in rows} == {key: CleanStatus.RETENTION for key in keys}


def test_a_run_killed_between_spark_s_commit_and_its_next_plan_goes_on_from_there_when_restarted(moto_endpoint,
                                                                                                tmp_path):
    """Killed after Spark committed batch 0 and before the next trigger, the source has not heard of the commit.
    On Spark 4.0 (latestOffset without a start) the restarted source planned the committed batch again, which
    Spark took for no new data at every trigger: the run never drained. Every row once, and every marker."""
    import time

    w = bucket_to_queue(moto_endpoint)
    for i in range(4):
        w.put(f"in/part-{i}.csv", f"{i}\n".encode())
    ck, out = tmp_path / "ck", tmp_path / "out"
    args = ["--queue-url", w.queue_url, "--format", "csv", "--schema", "id LONG", "--checkpoint", str(ck),
            "--output", str(out), "--endpoint-url", moto_endpoint, "--region", "us-east-1",
            "--option", "maxFilesPerTrigger=2", "--option", "sqs.longPollingWaitTimeSeconds=1"]
    first = Job(args + ["--trigger-interval", "60 seconds"], tmp_path / "run1.log")
    try:
        deadline = time.monotonic() + 180
        while not (ck / "commits" / "0").exists() and time.monotonic() < deadline and first.proc.poll() is None:
            time.sleep(0.2)
        assert (ck / "commits" / "0").exists(), first.tail()
    finally:
        first.kill()  # SIGKILL: the next trigger, where the source would hear of the commit, is a minute away
    assert not (ck / "offsets" / "1").exists()

    Job.run(args + ["--trigger-interval", "1 second", "--until-drained", "--idle-checks", "2"], tmp_path / "run2.log",
            timeout=240)
    assert sorted(committed_rows(out, ["id"])) == [(i,) for i in range(4)]
    marked = {f.key for m in markers.read_all(LocalStore(str(ck / "source-state"))) for f in m.files}
    assert marked == {f"in/part-{i}.csv" for i in range(4)}
