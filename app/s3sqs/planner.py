"""Pure planning decisions: which announced files are new, where a batch ends, how files are packed."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterable

from .events import FileEvent

NEW, DUPLICATE, TOO_OLD, GLOB_MISMATCH = "new", "duplicate", "too_old", "glob_mismatch"
OPEN_COST_BYTES = 4 << 20  # what opening a file is worth, in bytes, when packing (Spark's default)


@dataclass(frozen=True)
class Decision:
    file: FileEvent
    dedup_key: str
    outcome: str
    seen_seq: int | None = None  # for duplicates: the seq the file already has


def dedup_key(f: FileEvent, allow_overwrites: bool) -> str:
    """bucket+key; with overwrites allowed, a new eTag (or version) is a new file."""
    base = f"{f.bucket}/{f.key}"
    if allow_overwrites:
        return f"{base}\x00{f.version_id or f.etag or ''}"
    return base


def glob_matches(pattern: str | None, key: str) -> bool:
    """Like Spark's pathGlobFilter the pattern matches the file name; with a '/' in it, the whole key."""
    if not pattern:
        return True
    target = key if "/" in pattern else key.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(target, pattern)


def decide(files: Iterable[FileEvent], seen: Callable[[str], int | None], now: datetime,
           max_age_seconds: float, glob: str | None, allow_overwrites: bool) -> list[Decision]:
    """Classify each announced file. Duplicates inside `files` themselves count as duplicates too."""
    out: list[Decision] = []
    this_round: set[str] = set()
    for f in files:
        k = dedup_key(f, allow_overwrites)
        if not glob_matches(glob, f.key):
            out.append(Decision(f, k, GLOB_MISMATCH))
        elif f.event_time is not None and (now - f.event_time).total_seconds() > max_age_seconds:
            out.append(Decision(f, k, TOO_OLD))
        elif k in this_round:
            out.append(Decision(f, k, DUPLICATE))
        else:
            s = seen(k)
            if s is not None:
                out.append(Decision(f, k, DUPLICATE, s))
            else:
                this_round.add(k)
                out.append(Decision(f, k, NEW))
    return out


def batch_end(start: int, last_seq: int, max_files: int | None, max_bytes: int | None,
              sizes: Iterable[int] = ()) -> int:
    """The end offset of the next batch: all pending files up to the limits, at least one file."""
    end = last_seq if max_files is None else min(last_seq, start + max_files)
    if max_bytes is None or end <= start:
        return end
    total, n = 0, 0
    for size in sizes:
        if n >= end - start:
            break
        if n > 0 and total + size > max_bytes:
            break
        total += size
        n += 1
    return start + max(n, 1)


def pack(files: list, size_of: Callable[[object], int], max_partition_bytes: int,
         min_partitions: int = 2, open_cost: int = OPEN_COST_BYTES) -> list[list]:
    """Pack files into partitions by bytes, as Spark's file source does: big files stand alone,
    small ones share. Every Python task has a fixed cost, so partitions are few and large."""
    if not files:
        return []
    total = sum(size_of(f) + open_cost for f in files)
    target = min(max_partition_bytes, max(open_cost, total // max(1, min_partitions)))
    parts: list[list] = []
    current: list = []
    current_size = 0
    for f in sorted(files, key=size_of, reverse=True):
        cost = size_of(f) + open_cost
        if current and current_size + cost > target:
            parts.append(current)
            current, current_size = [], 0
        current.append(f)
        current_size += cost
    if current:
        parts.append(current)
    return parts
