"""bench_ingest's account of the connector's window, read from the job's own log lines."""
from __future__ import annotations

import pytest

from tests.support.scripts import load_script

LOG = """\
[job] query s3-sqs-ingest started: http://127.0.0.1:1/123456789012/q -> /tmp/out
2026-11-26 23:03:26,738 INFO s3sqs: s3-sqs source on http://127.0.0.1:1/123456789012/q: 0 files tracked
2026-11-26 23:03:29,707 INFO s3sqs: s3-sqs: planned offsets (0, 100]: 100 files; messages since the last batch: 150 new
[job] batch 0: 100 files, 10,000 rows, 291.9 KiB in 8.4 s (1,197 rows/s); planning 3,124 ms, snapshots: 6 in 58 ms; backlog: 0 messages
2026-11-26 23:03:35,899 INFO s3sqs: s3-sqs: planned offsets (100, 200]: 100 files; messages since the last batch: none
[job] batch 1: 100 files, 10,000 rows, 300.8 KiB in 1.0 s (10,299 rows/s); planning 1 ms, snapshots: 1 in 5 ms; backlog: 0 messages
"""


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_ingest")


def test_the_window_splits_into_receiving_and_each_batch(bench, tmp_path):
    log = tmp_path / "job.log"
    log.write_text(LOG)
    assert bench.where_time_went(log) == \
        "receiving until the first plan 3.0 s; batches 8.4 s (3.1 planning), 1.0 s (0.0 planning)"


def test_a_log_without_the_source_line_is_named(bench, tmp_path):
    log = tmp_path / "job.log"
    log.write_text("[job] batch 0: 1 files, 1 rows in 1.0 s (1 rows/s); planning 1 ms\n")
    with pytest.raises(SystemExit, match="no 's3-sqs source on' line"):
        bench.logged_at(bench.log_lines(log), "s3-sqs source on", log)


def test_cpu_seconds_counts_what_a_process_spends_and_not_its_sleep(bench):
    import os
    import time
    before = bench.cpu_seconds(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:  # 0.3 s of CPU
        pass
    busy = bench.cpu_seconds(os.getpid()) - before
    time.sleep(0.3)
    slept = bench.cpu_seconds(os.getpid()) - before - busy
    assert 0.2 <= busy <= 1.0 and slept < 0.1, (busy, slept)
