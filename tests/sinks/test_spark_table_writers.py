"""Spark's own Delta and Iceberg writers (--table-writer spark) in the real job (local Spark 4.0.2, moto),
side by side, fed by this source's replays:

1. SIGKILL each job while Spark's writer is writing batch k, the one holding the file the source numbered
   PAUSE_SEQ (a task is blocked in the source's read of it; k is 1 or 2, as the first receive window hands
   out files): the table has batches 0..k-1 only (whatever batch k's writer had begun is in no table commit).
2. Also remove Spark's log of batch k's offsets and of batch k-1's commit: the state a crash leaves
   between batch k-1's table commit and Spark's commit log (the source's index may already hold later
   files, as when Spark discards a planned offset). So the restart replays batch k-1, already in the
   table, then plans batch k anew.
3. Files with a new column arrive; restart until drained. The writer finds (query id, batch k-1) in the
   table and adds nothing; the new column makes the job restart its query with the evolved schema, and
   the writer adds the column.

Every row is in each table exactly once, and each batch was committed once.
"""
import datetime

import pytest

from tests.support.aws import bucket_to_queue
from tests.support.side_by_side import kill_at_pause_points, run_to_the_end
from tests.support.spark_tables import column_names, iceberg_table, only_where_table_jars_fit, rows, streaming_commits

pytestmark = [pytest.mark.spark, only_where_table_jars_fit]

FIRST, LATER, ROWS, PER_BATCH = 12, 4, 10, 5
PAUSE_SEQ = PER_BATCH + 2  # the 7th file recorded: in batch 1 or 2, not in the first (at most 5 files) nor the last
FORMATS = ("delta", "iceberg")


def job_args(w, work, table_format):
    args = ["--queue-url", w.queue_url, "--format", "csv", "--checkpoint", str(work / "ck"),
            "--endpoint-url", w.endpoint, "--region", "us-east-1", "--trigger-interval", "0 seconds",
            "--option", "header=true", "--option", "inferColumnTypes=true", "--option", "schemaHints=id LONG",
            "--option", f"maxFilesPerTrigger={PER_BATCH}", "--option", "sqs.visibilityTimeoutSeconds=5",
            "--option", "sqs.longPollingWaitTimeSeconds=1",
            "--sink", table_format, "--table-writer", "spark", "--partition-by", "day"]
    if table_format == "delta":
        return args + ["--table", str(work / "table")]
    return args + ["--table", "lake.orders", "--catalog", "hadoop", "--warehouse", str(work / "warehouse")]


def table(work, table_format):
    if table_format == "delta":
        from deltalake import DeltaTable
        return DeltaTable(str(work / "table"))
    return iceberg_table(work / "warehouse", "lake.orders")


def put_files(w, numbers, with_qty: bool) -> set:
    expected = set()
    for f in numbers:
        day = f"2026-11-0{1 + f % 3}"
        header = "id,name,day,qty" if with_qty else "id,name,day"
        lines = [f"{f * ROWS + i},n{f}-{i},{day}" + (f",{i}" if with_qty else "") for i in range(ROWS)]
        w.put(f"orders/{day}/file {f}.csv", (header + "\n" + "\n".join(lines) + "\n").encode())
        # inferColumnTypes reads the day as a DATE
        expected |= {(f * ROWS + i, f"n{f}-{i}", datetime.date.fromisoformat(day), i if with_qty else None)
                     for i in range(ROWS)}
    return expected


def forget(checkpoint, log: str, batch_id: int) -> None:
    for name in (str(batch_id), f".{batch_id}.crc"):
        (checkpoint / log / name).unlink(missing_ok=True)


def test_spark_writers_keep_every_row_once_through_kills_replays_and_a_new_column(moto_endpoint, tmp_path,
                                                                                   monkeypatch):
    expected, runs, queues = {}, {}, {}
    for fmt in FORMATS:
        w = queues[fmt] = bucket_to_queue(moto_endpoint)
        work = tmp_path / fmt
        work.mkdir()
        expected[fmt] = put_files(w, range(FIRST), with_qty=False)
        runs[fmt] = (job_args(w, work, fmt), work)

    # 1. Killed while Spark's writer writes batch k, which holds PAUSE_SEQ: batches 0..k-1 are in the table.
    kill_at_pause_points(runs, {fmt: f"read-seq:{PAUSE_SEQ}" for fmt in runs}, monkeypatch)
    replayed = {}
    for fmt, (_, work) in runs.items():
        ck = work / "ck"
        k = max(int(p.name) for p in (ck / "offsets").iterdir() if p.name.isdigit())
        assert k >= 1, (fmt, k)
        t = table(work, fmt)
        assert 0 < len(rows(t, ["id", "name", "day"])) < FIRST * ROWS, fmt
        assert [b for _, b in streaming_commits(t)] == list(range(k)) and not (ck / "commits" / str(k)).exists(), fmt
        # 2. As if the job had died between batch k-1's table commit and Spark's commit log.
        forget(ck, "offsets", k)
        forget(ck, "commits", k - 1)
        replayed[fmt] = k - 1

    # 3. A new column arrives; restarted until drained.
    for fmt, w in queues.items():
        expected[fmt] |= put_files(w, range(FIRST, FIRST + LATER), with_qty=True)
    logs = run_to_the_end(runs, "run2.log", ["--until-drained", "--idle-checks", "2"])
    for fmt, (_, work) in runs.items():
        assert (work / "ck" / "commits" / str(replayed[fmt])).exists(), f"{fmt}: Spark did not replay the batch"
        assert "has new columns qty" in logs[fmt] and "restarting the query with the evolved schema" in logs[fmt]
        t = table(work, fmt)
        assert "qty" in column_names(t), fmt
        got = rows(t, ["id", "name", "day", "qty"])
        assert len(got) == len(expected[fmt]) and set(got) == expected[fmt], \
            f"{fmt}: {len(got)} rows, {len(set(got))} distinct, {len(expected[fmt])} expected"
        commits = streaming_commits(t)
        assert len(commits) == len(set(commits)) and len({q for q, _ in commits}) == 1, (fmt, commits)
        assert queues[fmt].depth() == 0, fmt
