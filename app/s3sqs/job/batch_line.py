"""One line per batch for the person watching a run: files, rows, bytes, speed, problems, what the source
skipped, what planning and snapshots cost, and the backlog. The figures come from metrics.py."""
from __future__ import annotations

from ..core.units import human_bytes
from .metrics import BatchMetrics


def batch_line(m: BatchMetrics) -> str:
    seconds = m.batch_ms / 1000
    speed = rate(m.rows, seconds, "rows")
    size = f", {human_bytes(m.bytes)}" if m.bytes is not None else ""
    problems = _counts((m.quarantined, "quarantined"), (m.missing, "missing"), (m.malformed_rows, "malformed rows"),
                       (m.new_columns, "files with columns the schema lacks"))
    if m.first_reason:
        problems += f" (first: {m.first_reason[:200]})"
    skipped = _counts((m.duplicates, "duplicates"), (m.filtered, "filtered"), (m.unparseable, "unparseable messages"))
    queued = m.visible + m.in_flight + m.delayed
    delayed = f", {m.delayed:,} delayed" if m.delayed else ""
    return (f"[job] batch {m.batch_id}: {m.files:,} files, {m.rows:,} rows{size} in {seconds:.1f} s ({speed})"
            f"{'; ' + problems if problems else ''}"
            f"{'; skipped since the last batch: ' + skipped if skipped else ''}"
            f"; planning {m.planning_ms:,} ms, snapshots: {m.snapshots} in {m.snapshot_ms:,} ms"
            f"; backlog: {queued:,} messages ({m.visible:,} visible, {m.in_flight:,} in flight{delayed}), "
            f"{m.pending_files:,} files recorded and not yet planned")


def rate(count: int, seconds: float, unit: str) -> str:
    """A speed that never reads "0 rows/s" for a batch that did move rows."""
    if seconds <= 0:
        return "-"
    r = count / seconds
    return f"{r:,.0f} {unit}/s" if r >= 10 or r == 0 else f"{r:.1f} {unit}/s"


def _counts(*pairs: tuple[int, str]) -> str:
    return ", ".join(f"{n:,} {what}" for n, what in pairs if n)
