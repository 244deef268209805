"""Kill the job with SIGKILL after an offset was logged but before its commit, restart, and find
every input row in the sink exactly once."""
import pytest

from tests.support.aws import bucket_to_queue
from devtools.committed import committed_rows
from tests.support.spark import Job, only_on_newest_spark, wait_for

FILES, ROWS = 60, 20


@pytest.mark.spark
@only_on_newest_spark  # on EMR's Spark, scripts/chaos.py kills the job at random moments (tests/system)
def test_sigkill_between_offset_and_commit_loses_and_duplicates_nothing(moto_endpoint, tmp_path):
    w = bucket_to_queue(moto_endpoint)
    for f in range(FILES):
        body = "id,name\n" + "".join(f"{f * ROWS + i},n{f}-{i}\n" for i in range(ROWS))
        w.put(f"crash/file {f}.csv", body.encode())
    ck, out = tmp_path / "ck", tmp_path / "out"
    args = ["--queue-url", w.queue_url, "--format", "csv", "--schema", "id LONG, name STRING",
            "--checkpoint", str(ck), "--output", str(out), "--endpoint-url", moto_endpoint,
            "--region", "us-east-1", "--trigger-interval", "0 seconds",
            "--option", "header=true", "--option", "maxFilesPerTrigger=12",
            "--option", "sqs.visibilityTimeoutSeconds=5", "--option", "sqs.longPollingWaitTimeSeconds=1"]

    first = Job(args, tmp_path / "run1.log")
    killed_at = None
    try:
        def logged_not_committed():
            nonlocal killed_at
            for n in range(1, 6):
                if (ck / "offsets" / str(n)).exists() and not (ck / "commits" / str(n)).exists():
                    first.kill()  # SIGKILL to the whole process group, right now
                    killed_at = n
                    return True
            return False
        assert wait_for(logged_not_committed, timeout=240, interval=0.02), first.tail()
    finally:
        first.kill()
    assert (ck / "offsets" / str(killed_at)).exists() and not (ck / "commits" / str(killed_at)).exists()
    logged = (ck / "offsets" / str(killed_at)).read_text()

    second = Job(args + ["--until-drained", "--idle-checks", "2"], tmp_path / "run2.log")
    try:
        assert second.wait(timeout=300) == 0, second.tail()
    finally:
        second.kill()

    assert (ck / "offsets" / str(killed_at)).read_text() == logged  # the batch was replayed, not re-planned
    assert (ck / "commits" / str(killed_at)).exists()
    ids = sorted(r[0] for r in committed_rows(out, ["id"]))
    assert ids == list(range(FILES * ROWS)), f"{len(ids)} rows, {len(set(ids))} distinct"
    assert w.depth() == 0
