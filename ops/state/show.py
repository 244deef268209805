"""How source-state shows the state: the summary, one line or one JSON object per file, a lookup's answer;
and how it reads a time given to --since. Pure: no I/O."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from s3sqs.core.units import human_bytes, iso, parse_duration_seconds, to_ms
from s3sqs.state.view import STATUSES, FileState

from ops.state import SourceStateError

STATUS_NOTES = {"planned": "in a batch, not known to be in the sink yet", "pending": "recorded, not in a batch yet"}
FILES_HEADER = f"{'SEQ':>9}  {'BATCH':>6}  {'STATUS':<14}  {'EVENT (UTC)':<20}  {'SIZE':>10}  {'COMMITTED (UTC)':<20}  URI"


def parse_since(text: str, now: datetime) -> int:
    """--since: an ISO 8601 time (UTC unless it says otherwise) or a duration ago (90s, 30m, 12h, 3d, 1w)."""
    t = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?\s*[a-z]+", t.lower()):
        try:
            return to_ms(now - timedelta(seconds=parse_duration_seconds(t, bare_unit=None)))
        except ValueError:
            pass
    try:
        when = datetime.fromisoformat(t)
    except ValueError:
        raise SourceStateError(f"--since {text!r} is not a time: give an ISO time such as 2026-11-20 or "
                         "2026-11-20T08:00:00Z, or a duration ago such as 90m, 12h or 3d") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return to_ms(when)


def file_line(f: FileState) -> str:
    size = human_bytes(f.size) if f.size is not None else "-"
    batch = str(f.batch_id) if f.batch_id is not None else "-"
    return (f"{f.seq:>9}  {batch:>6}  {f.status:<14}  {iso(f.event_ms) or '-':<20}  {size:>10}  "
            f"{iso(f.committed_ms) or '-':<20}  {f.uri}")


def file_json(f: FileState) -> dict:
    """A file as JSON: the view's fields, with the times in ISO 8601 beside their epoch ms."""
    return {**f.as_dict(), "event_time": iso(f.event_ms), "committed_at": iso(f.committed_ms)}


def lookup_lines(key: str, found: list[FileState]) -> list[str]:
    if not found:
        return [f"{key}: not in the source state (never announced on this queue, filtered out by pathGlobFilter "
                "or maxFileAge, or forgotten after maxFileAge)"]
    lines = [f"{key}: seen {len(found)} time{'s' if len(found) != 1 else ''}"]
    for f in found:
        where = f"batch {f.batch_id}" if f.batch_id is not None else "no batch yet"
        note = f" ({STATUS_NOTES[f.status]})" if f.status in STATUS_NOTES else ""
        lines.append(f"  {f.uri}: seq {f.seq}, {where}, {f.status}{note}")
        what = ", ".join(x for x in (f.event_name, f.origin, human_bytes(f.size) if f.size is not None else None) if x)
        lines.append(f"    event      {iso(f.event_ms) or '-'}  {what}")
        if f.committed_ms is not None:
            lines.append(f"    committed  {iso(f.committed_ms)}")
        if f.error:
            lines.append(f"    error      {f.error}")
        if f.quarantine_copy:
            lines.append(f"    copy       {f.quarantine_copy}")
    return lines


def summary_lines(where: str, s: dict, now: datetime) -> list[str]:
    written = s["state_written_at"]
    age = f", {_ago(now.timestamp() - written)} ago" if written else ""
    lines = [f"source state: {where} (version {s['state_version']}, written {iso(written * 1000) if written else '?'}"
             f"{age}; {human_bytes(s['state_bytes'] or 0)})"]
    events = (f", events from {iso(s['oldest_event_ms'])} to {iso(s['newest_event_ms'])}"
              if s["oldest_event_ms"] is not None else "")
    lines.append(f"files tracked: {s['files_tracked']:,} ({human_bytes(s['bytes_tracked'])}){events}")
    for status in STATUSES:
        note = f"  ({STATUS_NOTES[status]})" if status in STATUS_NOTES else ""
        lines.append(f"  {status:<15}{s['by_status'][status]:>10,}{note}")
    last = s["last_batch"]
    if last is None:
        lines.append("batches: none planned yet")
    else:
        done = f"committed {iso(last['committed_ms'])}" if last["committed_ms"] else "not recorded as committed yet"
        lines.append(f"batches: {s['batches']:,}; the last, {last['id']}: offsets ({last['start']}, {last['end']}], "
                     f"{count(last['files'], 'file')}, {done}")
    if s["sink_committed_seq"] is None:
        lines.append("sink: Spark's commit log not read (give --checkpoint to read it)")
    else:
        lines.append(f"sink: Spark committed through offset {s['sink_committed_seq']:,}; the source recorded its "
                     f"commits through {s['source_committed_seq']:,} (it learns of a commit when it plans the next "
                     "batch)")
    counters = [f"{k} {v:,}" for k, v in s["counters"].items() if v]
    lines.append("counters since the state began: " + (", ".join(counters) or "none"))
    return lines


def summary_json(where: str, s: dict) -> dict:
    last = s["last_batch"]
    return {"stateLocation": where, **s, "state_written_at": iso(s["state_written_at"] * 1000)
            if s["state_written_at"] else None, "oldest_event_time": iso(s["oldest_event_ms"]),
            "newest_event_time": iso(s["newest_event_ms"]),
            "last_batch": None if last is None else {**last, "committed_at": iso(last["committed_ms"])}}


def count(n: int, what: str) -> str:
    """`1 file`, `2 files`."""
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"
