"""How many partitions a batch is packed into at least: the executor cores present when it is planned.

EMR Serverless adds and removes executors while a stream runs, so a figure taken once at start is soon
wrong. The source plans in a Python process of Spark's own (the streaming runner), which cannot see the
SparkContext; the job, which can, keeps the live figure in a small local file on the driver
(job/executors.py) and names it in the option `executorCoresFile`. This module is the figure's format
and the decision; reading the file is the adapter's (planning/source.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

# A figure older than this is not live any more (the job refreshes it every second or so): fall back.
MAX_AGE_SECONDS = 30.0
# A bound on what one batch is spread over, whatever the cluster reports: beyond it a batch of small files
# costs more in per-task start-up than the extra cores give back.
MAX_SLOTS = 4096


@dataclass(frozen=True)
class LiveCores:
    """The cores of the executors present (`cores` over `executors` executors), read at `at` (epoch s)."""
    cores: int
    executors: int
    at: float

    def encode(self) -> str:
        return json.dumps({"cores": self.cores, "executors": self.executors, "at": self.at})


def decode(text: str) -> LiveCores:
    """The figure the job wrote; ValueError naming what is wrong with it otherwise."""
    try:
        d = json.loads(text)
        live = LiveCores(int(d["cores"]), int(d["executors"]), float(d["at"]))
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"not a live-cores figure ({e.__class__.__name__}: {e}): {text[:200]!r}") from None
    if live.cores < 0 or live.executors < 0:
        raise ValueError(f"negative cores or executors in {text[:200]!r}")
    return live


def batch_slots(live: LiveCores | None, min_partitions: int | None, fallback: int, now: float) -> int:
    """At least this many partitions for the batch planned `now`: the live executor cores, bounded below
    by `minPartitions` (when set) and above by MAX_SLOTS. Without a live figure (none, stale, or no
    executor registered at that moment), `minPartitions` or `fallback`, as before there was one."""
    if live is None or live.cores < 1 or now - live.at > MAX_AGE_SECONDS:
        return max(1, min_partitions or fallback)
    return max(min_partitions or 1, min(live.cores, MAX_SLOTS))
