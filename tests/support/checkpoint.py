"""A streaming checkpoint laid out as Spark writes it, for tests that read one without running Spark."""
from __future__ import annotations

from pathlib import Path


def log_batch(ck: Path, batch: int, end: int, committed: bool) -> None:
    """Spark's offset-log entry for `batch`, ending at the source's offset `end`, and its commit-log entry
    when `committed`."""
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1}}\n{{"seq":{end}}}\n')
    if committed:
        (ck / "commits").mkdir(exist_ok=True)
        (ck / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')
