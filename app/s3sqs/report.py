"""One line per batch for the person watching a run: files, rows, speed, problems and backlog."""
from __future__ import annotations

import json

from .completion import Progress


def offset_seq(value) -> int | None:
    """The seq of an offset as Spark's progress shows it: {"seq": N}, its JSON text, or nothing."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return int(value["seq"]) if isinstance(value, dict) and "seq" in value else None


def batch_end(progress: dict) -> int:
    for src in progress.get("sources") or ():
        return offset_seq(src.get("endOffset")) or 0
    return 0


def files_in(progress: dict) -> int:
    """Files of a batch, from the source's start and end offsets in Spark's query progress."""
    for src in progress.get("sources") or ():
        return (offset_seq(src.get("endOffset")) or 0) - (offset_seq(src.get("startOffset")) or 0)
    return 0


def batch_line(progress: dict, source: Progress, problems: dict[str, int]) -> str:
    rows = int(progress.get("numInputRows") or 0)
    seconds = (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000
    speed = f"{rows / seconds:,.0f} rows/s" if seconds > 0 else "-"
    pending = source.recorded - (source.logged or 0)
    issues = ", ".join(f"{n} {k}" for k, n in problems.items() if n)
    return (f"[job] batch {progress.get('batchId')}: {files_in(progress):,} files, {rows:,} rows in {seconds:.1f} s "
            f"({speed}){'; ' + issues if issues else ''}; backlog: {source.queued:,} messages queued, "
            f"{max(0, pending):,} files recorded and not yet planned")
