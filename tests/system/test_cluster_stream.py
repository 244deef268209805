"""The source on a local cluster (two executor JVMs beside the driver's): stream tests whose subject
crosses JVMs run again here, on one shared session, and each batch's partitions follow the executors
present when it is planned, as one is removed and another added mid-stream."""
import pytest

from devtools.committed import committed_rows
from s3sqs.job.executors import ExecutorCoresFile, live_cores
from tests.planning import test_stream
from tests.planning.test_stream import source_options
from tests.support.aws import bucket_to_queue
from tests.support.cluster import ask_for_executors, cluster_session, cluster_tests, executor_ids, wait_until

pytestmark = cluster_tests


@pytest.fixture(scope="module")
def spark():
    with cluster_session("s3sqs-cluster-tests") as session:
        yield session


# Quarantine records and copies written by executors, and a big file's pieces read by tasks in both
# executors and put back together. (The job on the cluster, warm-up, batch lines and the table sinks'
# file hand-off included, is in test_cluster_faults.py.)
test_bad_files_are_quarantined_and_missing_ones_recorded_by_default = \
    test_stream.test_bad_files_are_quarantined_and_missing_ones_recorded_by_default
test_a_file_bigger_than_max_partition_bytes_is_split_across_tasks_as_spark_splits_it = \
    test_stream.test_a_file_bigger_than_max_partition_bytes_is_split_across_tasks_as_spark_splits_it

ROWS = 5


def partitions_per_batch(out) -> dict[int, int]:
    """Files the Parquet sink committed per batch: one per partition that had rows."""
    meta = out / "_spark_metadata"
    return {int(p.name): len(p.read_text().splitlines()) - 1 for p in meta.iterdir() if p.name.isdigit()}


def test_each_batch_is_spread_over_the_executor_cores_present_when_it_is_planned(spark, moto_endpoint, tmp_path):
    sc = spark.sparkContext._jsc.sc()
    assert len(executor_ids(spark)) == 2 and live_cores(spark).cores == 2
    cores = ExecutorCoresFile(spark, str(tmp_path / "executor-cores.json")).start()
    w = bucket_to_queue(moto_endpoint)
    opts = source_options(w, tmp_path, executorCoresFile=cores.path, maxFilesPerTrigger=-1)
    q = (spark.readStream.format("s3-sqs").schema("id LONG").options(**opts).load()
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="1 second").start())
    planned_with: dict[int, int] = {}  # batch id -> live cores while its files were uploaded and planned
    sent = 0
    try:
        def wave(files: int, live: int) -> None:
            nonlocal sent
            wait_until(lambda: cores.last is not None and cores.last.cores == live, 60, f"{live} live cores")
            before = {p["batchId"] for p in q.recentProgress}
            for _ in range(files):
                w.put(f"sizing/{sent}.csv", "".join(f"{sent * ROWS + i}\n" for i in range(ROWS)).encode())
                sent += 1
            wait_until(lambda: q.exception() is not None or
                       sum(p["numInputRows"] for p in q.recentProgress) >= sent * ROWS, 120, f"{sent} files in")
            assert q.exception() is None, q.exception()
            planned_with.update({p["batchId"]: live for p in q.recentProgress
                                 if p["numInputRows"] and p["batchId"] not in before})

        wave(6, live=2)
        (lost,) = executor_ids(spark)[:1]
        assert sc.killExecutor(lost)  # also lowers the executors Spark asks for: none replaces it
        wave(6, live=1)
        assert ask_for_executors(spark, 2)  # another executor, in a new JVM
        wave(6, live=2)
    finally:
        q.stop()
        cores.stop()
    assert sorted(r[0] for r in committed_rows(tmp_path / "out", ["id"])) == list(range(sent * ROWS))
    files_in = {p["batchId"]: p["numInputRows"] // ROWS for p in q.recentProgress if p["numInputRows"]}
    parts = partitions_per_batch(tmp_path / "out")
    got = {b: (files_in[b], planned_with[b], parts[b]) for b in planned_with}
    # At least as many partitions as live cores (no more than there are files, each read whole).
    assert all(n == min(files, live) for files, live, n in got.values()), got
    for live in (1, 2):  # each figure met a batch of several files, where it made the difference
        assert any(files >= 2 and lv == live for files, lv, _ in got.values()), got
