"""The trickle benchmark's schedule and its per-phase figures (scripts/bench_latency.py)."""
from __future__ import annotations

import pytest

from tests.support.scripts import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_latency")


def test_aligned_uploads_fall_on_whole_seconds(bench):
    assert bench.upload_times(100.0, 4, aligned=True) == [100.0, 101.0, 102.0, 103.0]


def test_spread_uploads_keep_one_a_second_and_cover_the_trigger_interval(bench):
    times = bench.upload_times(1_000.0, 60, aligned=False)
    assert all(b > a for a, b in zip(times, times[1:]))
    assert times[0] >= 1_000.0 and times[-1] < 1_060.0
    phases = [t % 5.0 for t in times]  # a 5-second trigger fires at whole multiples of 5 s
    assert {int(ph * 2) for ph in phases} == set(range(10))  # every half second of the interval is met
    assert min(min(ph, 5.0 - ph) for ph in phases) > 0.005  # none on a trigger instant, where it is a coin toss


def test_batch_phases_are_medians_of_the_batches_that_read_rows_largest_first(bench):
    progress = [
        {"numInputRows": 0, "durationMs": {"triggerExecution": 9_000, "latestOffset": 9_000}},
        {"numInputRows": 5, "durationMs": {"triggerExecution": 600, "addBatch": 400, "walCommit": 50}},
        {"numInputRows": 4, "durationMs": {"triggerExecution": 700, "addBatch": 500, "walCommit": 60}},
        {"numInputRows": 6, "durationMs": {"triggerExecution": 800, "addBatch": 450}},
    ]
    phases = bench.batch_phases(progress)
    assert phases == {"triggerExecution": 700, "addBatch": 450, "walCommit": 50}
    assert list(phases) == ["triggerExecution", "addBatch", "walCommit"]
    assert bench.batch_phases([{"numInputRows": 0, "durationMs": {"addBatch": 1}}]) == {}
