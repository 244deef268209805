"""Delta and Iceberg sinks in the real job (local Spark, moto), side by side: SIGKILL one job while a
batch's files are being written and the other after that batch's table commit but before Spark logged
it as done, restart both until drained, and find every row in each table exactly once. With a transform
the files are written after a shuffle; without one, by the read tasks (a direct write)."""
import pytest

from tests.support.aws import bucket_to_queue
from tests.support.side_by_side import kill_at_pause_points, run_to_the_end
from tests.support.spark import only_on_newest_spark, pyspark_version
from tests.support.tables import batch_commits, delta_target, iceberg_target, referenced_files, rows

FILES, ROWS, PER_BATCH = 24, 25, 12
FORMATS = ("delta", "iceberg")


def job_args(w, work, table_format, direct: bool = False):
    args = ["--queue-url", w.queue_url, "--format", "csv",
            "--schema", "id LONG, name STRING, day STRING, _file_path STRING",
            "--checkpoint", str(work / "ck"), "--endpoint-url", w.endpoint, "--region", "us-east-1",
            "--trigger-interval", "0 seconds", "--option", "header=true",
            "--option", f"maxFilesPerTrigger={PER_BATCH}", "--option", "sqs.visibilityTimeoutSeconds=5",
            "--option", "sqs.longPollingWaitTimeSeconds=1",
            "--sink", table_format, "--partition-by", "day"]
    if not direct:
        args += ["--transform", "tests.support.transforms:tag_rows"]
    if table_format == "delta":
        return args + ["--table", str(work / "table")]
    return args + ["--table", "lake.orders", "--catalog", "sql", "--catalog-uri", f"sqlite:///{work}/catalog.db",
                   "--warehouse", str(work / "warehouse")]


def kill_points() -> dict[str, str]:
    """Where each table's job is killed. Both jobs run side by side, each killed at one point, then
    restarted; the points swap between the two Spark versions `make test` runs, so each table format
    meets each point in a direct write (the write after a shuffle runs on the newest Spark only) (tests/sinks/test_table_targets.py covers the commit logic of both without Spark)."""
    points = {"delta": "write:1", "iceberg": "commit:1"}
    if pyspark_version() < (4, 2):
        points = {"delta": "commit:1", "iceberg": "write:1"}
    return points


@pytest.mark.spark
# The write after a shuffle (only with a transform or --rebalance-writes) once, on the newest Spark; direct
# writes, the default, on both.
@pytest.mark.parametrize("direct", [pytest.param(False, marks=only_on_newest_spark), True],
                         ids=["rebalanced", "direct"])
def test_sigkill_during_write_or_after_commit_keeps_every_row_once(moto_endpoint, tmp_path, monkeypatch, direct):
    expected, runs, targets, queues = {}, {}, {}, {}
    for fmt in FORMATS:
        w = queues[fmt] = bucket_to_queue(moto_endpoint)
        work = tmp_path / fmt
        work.mkdir()
        expected[fmt] = set()
        for f in range(FILES):
            day = f"2026-11-0{1 + f % 3}"
            lines = [f"{f * ROWS + i},n{f}-{i},{day}" for i in range(ROWS)]
            w.put(f"orders/{day}/file {f}.csv", ("id,name,day\n" + "\n".join(lines) + "\n").encode())
            name = (lambda n: n) if direct else str.upper  # the transform upper-cases it
            expected[fmt] |= {(f * ROWS + i, name(f"n{f}-{i}"), day, f"file {f}.csv") for i in range(ROWS)}
        runs[fmt] = (job_args(w, work, fmt, direct), work)
        targets[fmt] = (delta_target(work / "table") if fmt == "delta"
                        else iceberg_target(work / "catalog.db", "lake.orders"))
    points = kill_points()

    # 1. Batch 0 commits normally; each job is killed at its point in batch 1.
    said = kill_at_pause_points(runs, points, monkeypatch)
    assert all(said[fmt].startswith(points[fmt]) for fmt in FORMATS), said
    orphans = {}
    for fmt, target in targets.items():
        assert batch_commits(target, 0) == 1 and not (tmp_path / fmt / "ck" / "commits" / "1").exists(), fmt
        if points[fmt].startswith("write"):
            # One of batch 1's files is complete on disk; none is in the table.
            orphans[fmt] = {str(p) for p in (tmp_path / fmt).rglob("part-000001-*.parquet")}
            assert orphans[fmt] and not orphans[fmt] & referenced_files(target), fmt
            assert batch_commits(target, 1) == 0, fmt
        else:
            # The table has batch 1; Spark has not logged it as done, so it will replay it.
            assert batch_commits(target, 1) == 1, fmt

    # 2. Restarted until drained: Spark replays batch 1. After the write kill it is written anew and
    #    committed; after the commit kill it must not be added a second time.
    run_to_the_end(runs, "run2.log", ["--until-drained", "--idle-checks", "2"])
    for fmt, target in targets.items():
        got = rows(target, ["id", "name", "day", "_file_path" if direct else "source_file"])
        if direct:
            got = [(*r[:3], r[3].rsplit("/", 1)[-1]) for r in got]
        assert len(got) == len(expected[fmt]) and set(got) == expected[fmt], \
            f"{fmt}: {len(got)} rows, {len(set(got))} distinct, {len(expected[fmt])} expected"
        assert batch_commits(target, 1) == 1, fmt
        log = (tmp_path / fmt / "run2.log").read_text()
        assert ("(files written by the read tasks)" in log) is direct, fmt
        if points[fmt].startswith("write"):
            assert not orphans[fmt] & referenced_files(target), fmt  # the killed write's files stay orphans
        else:
            assert "batch 1 is already in" in log, fmt
        assert queues[fmt].depth() == 0, fmt
