"""Parts of a local cluster lost while the job runs into a Delta table (Python writer: executors write the
files, the driver commits them), then every row counted:

1. an executor JVM SIGKILLed while its task reads: Spark retries the task on the other executor (and the
   cluster starts a new executor in its place);
2. a Python worker SIGKILLed mid-task: Spark retries the task;
3. an executor JVM SIGKILLed while its task writes batch 2's table files: the task is retried elsewhere
   (the map outputs the lost executor held are computed again), and the killed attempt's files stay
   orphans, in no table commit;
4. the driver's JVM alone SIGKILLed while an executor writes batch 3's files (the executors then stop by
   themselves); the job is restarted until drained and replays batch 3.

Every row is in the table exactly once, each batch was committed once, the bad file was quarantined and
the queue and its DLQ are empty."""
import os
import signal

from devtools import processes
from devtools.local_spark import CLUSTER_MASTER
from tests.support.aws import bucket_to_queue
from tests.support.cluster import cluster_tests, wait_until
from tests.support.spark import ROOT, Job
from tests.support.tables import batch_commits, delta_target, referenced_files, rows

pytestmark = cluster_tests
FILES, ROWS, PER_BATCH = 16, 20, 4
FAULTS = str(ROOT / "tests" / "support" / "faults")
# Pause points (tests/support/faults), in the order the batches reach them, and what is killed there.
PAUSES = [("read-seq:3", "executor"), ("read-seq:7", "worker"), ("write:2", "executor"), ("write:3", "driver")]


def job_args(w, work):
    return ["--queue-url", w.queue_url, "--format", "csv", "--schema", "id LONG, name STRING, day STRING",
            "--checkpoint", str(work / "ck"), "--endpoint-url", w.endpoint, "--region", "us-east-1",
            "--trigger-interval", "0 seconds", "--option", "header=true",
            "--option", f"maxFilesPerTrigger={PER_BATCH}", "--option", "sqs.visibilityTimeoutSeconds=5",
            "--option", "sqs.longPollingWaitTimeSeconds=1", "--sink", "delta", "--table", str(work / "table"),
            "--partition-by", "day"]


def put_files(w) -> set:
    expected = set()
    for f in range(FILES):
        day = f"2026-11-0{1 + f % 2}"
        w.put(f"orders/file {f}.csv", ("id,name,day\n" + "".join(f"{f * ROWS + i},n{i},{day}\n"
                                                                  for i in range(ROWS))).encode())
        expected |= {(f * ROWS + i, f"n{i}", day) for i in range(ROWS)}
    w.put("orders/broken.csv.gz", b"\x1f\x8b not really gzip")
    return expected


def kill_at_pauses(job: Job, marker) -> dict[str, int]:
    """Wait for each pause in turn and kill what PAUSES says; the pids killed, by what."""
    killed = {}
    for n, (point, what) in enumerate(PAUSES):
        path = marker if n == 0 else marker.with_name(f"{marker.name}.{n}")
        wait_until(lambda: path.exists() and path.read_text().endswith("\n") or job.proc.poll() is not None,
                   240, f"pause {point}")
        assert path.exists(), f"the job ended before {point}\n{job.tail()}"
        worker = int(path.read_text().split(":")[-1])
        executor = processes.executor_of(worker)
        assert executor is not None, f"{point}: the paused process {worker} runs in no executor JVM"
        victim = {"executor": executor, "worker": worker, "driver": job.proc.pid}[what]
        os.kill(victim, signal.SIGKILL)
        killed[what if what not in killed else f"{what} again"] = victim
        if what != "driver":  # the batch goes on: a retry finds the marker there and does not pause
            wait_until(lambda: not processes.alive(victim), 30, f"{what} {victim} to die")
    return killed


def test_executor_worker_and_driver_losses_keep_every_row_once(moto_endpoint, tmp_path, monkeypatch):
    w = bucket_to_queue(moto_endpoint)
    expected = put_files(w)
    work = tmp_path
    args = job_args(w, work)
    target = delta_target(work / "table")

    with monkeypatch.context() as env:  # the fault injector for this run only; PYTHONPATH restored after
        env.setenv("PYTHONPATH", os.pathsep.join([FAULTS, os.environ.get("PYTHONPATH", "")]))
        env.setenv("S3SQS_PAUSE_AT", ",".join(p for p, _ in PAUSES))
        env.setenv("S3SQS_PAUSE_MARKER", str(work / "paused"))
        first = Job(args, work / "run1.log", master=CLUSTER_MASTER)
    try:
        killed = kill_at_pauses(first, work / "paused")
        assert first.wait(timeout=120) != 0  # the driver died
    finally:
        first.kill()
    log1 = (work / "run1.log").read_text(errors="replace")
    assert "[job] executor cores: 2 (2 executors)" in log1
    assert "ExecutorLostFailure" in log1 and "Python worker exited unexpectedly" in log1, first.tail(200)
    assert len(set(killed.values())) == len(killed), killed
    # The write kill: batch 2's completed file of the killed attempt is on disk, in no commit.
    assert batch_commits(target, 2) == 1 and batch_commits(target, 3) == 0
    orphans = {str(p) for p in (work / "table").rglob("part-000002-*.parquet")} - referenced_files(target)
    assert orphans, sorted(p.name for p in (work / "table").rglob("part-000002-*"))

    second = Job(args + ["--until-drained", "--idle-checks", "2"], work / "run2.log", master=CLUSTER_MASTER)
    try:
        assert second.wait(timeout=300) == 0, second.tail()
    finally:
        second.kill()

    got = rows(target, ["id", "name", "day"])
    assert len(got) == len(expected) and set(got) == expected, f"{len(got)} rows, {len(set(got))} distinct"
    committed = [int(h["s3sqs.batchId"]) for h in target.table().history() if h.get("s3sqs.batchId") is not None]
    assert len(committed) == len(set(committed)) and {2, 3} <= set(committed), committed  # each batch once
    assert not orphans & referenced_files(target)
    (record,) = (work / "ck" / "quarantine" / "batches").rglob("*.json")
    assert "broken.csv.gz" in record.read_text()
    logs = log1 + (work / "run2.log").read_text(errors="replace")
    assert "1 quarantined" in logs
    assert w.depth() == 0 and dlq_depth(w) == 0


def dlq_depth(w) -> int:
    a = w.sqs.get_queue_attributes(QueueUrl=w.dlq_url, AttributeNames=["All"])["Attributes"]
    return sum(int(a[k]) for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"))
