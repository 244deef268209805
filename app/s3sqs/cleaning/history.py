"""What a run reads before it judges: each consumer's commit markers after its watermark, and the journal's
chunks after the last one still needed (progress.py). Without a progress (a dry run, or the first run)
that is every marker and the whole journal."""
from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..state import markers
from ..state.store import S3Store, Store
from . import journal
from .progress import Mark, Progress, Seen, starts_over
from .rule import Commit, Consumer

READERS = 8  # markers read at once, each one small GET (botocore pools 10 connections)


@dataclass(frozen=True)
class ConsumerMarkers:
    """A consumer of the stack, and the store its commit markers are in (its state location)."""
    consumer: Consumer
    store: Store


@dataclass
class History:
    commits: dict[str, list[Commit]]             # key -> every commit of it read
    cleaned: dict[str, tuple[journal.Cleaned, ...]]  # key -> what the journal read says was done to it
    starts: dict[str, Mark | None]               # consumer -> the watermark its markers were read after
    seen: dict[str, list[Seen]]                  # consumer -> the markers read, oldest first
    chunks: list[tuple[str, frozenset[str]]]     # the journal chunks read, oldest first, with their keys
    journal_from: str = ""                       # the chunk they were read after ("": all)


def location_of(store: Store) -> str:
    return f"s3://{store.bucket}/{store.prefix}" if isinstance(store, S3Store) else str(getattr(store, "root", ""))


def read(consumers: list[ConsumerMarkers], bucket: str, journal_store: Store, start: Progress,
         say: Callable[[str], None]) -> History:
    h = History(defaultdict(list), {}, {}, {}, [])
    journal_from = start.journal
    for cm in consumers:
        was = start.marks.get(cm.consumer.name)
        mark, seen, commits = _markers(cm, bucket, was, say)
        if was is not None and mark is None:
            # Its old markers are read again: so is the whole journal, so that what was cleaned after them
            # is known as such, not judged again from the old commits alone.
            journal_from = ""
        h.starts[cm.consumer.name], h.seen[cm.consumer.name] = mark, seen
        for key, cs in commits.items():
            h.commits[key].extend(cs)
    cleaned: dict[str, list[journal.Cleaned]] = defaultdict(list)
    h.journal_from = journal_from
    for name, records in journal.read_after(journal_store, journal_from):
        mine = [c for c in records if c.bucket == bucket]
        h.chunks.append((name, frozenset(c.key for c in mine)))
        for c in mine:
            cleaned[c.key].append(c)
    h.cleaned = {k: tuple(sorted(v, key=lambda c: c.at_ms)) for k, v in cleaned.items()}
    return h


def _markers(cm: ConsumerMarkers, bucket: str, mark: Mark | None, say):
    """(the watermark read after, the markers read, their commits by key) for one consumer."""
    name, where = cm.consumer.name, location_of(cm.store)
    if mark is not None and mark.location != where:
        mark = None  # a new state location: its markers from the first
    listed = markers.listed(cm.store, mark.name if mark else "")
    if mark is not None:
        if not listed or listed[0] != (mark.name, mark.tag):
            say(f"clean: consumer {name}'s marker {mark.name} is gone or was written again (its state started over?): "
                "reading its markers from the first")
            return _markers(cm, bucket, None, say)
        listed = listed[1:]
    seen, commits = [], defaultdict(list)
    with ThreadPoolExecutor(READERS, thread_name_prefix="markers") as pool:  # in name order, READERS at a time
        read = list(pool.map(lambda n: markers.read(cm.store, n), [n for n, _ in listed]))
    for (marker_name, tag), m in zip(listed, read):
        if m is None:
            continue
        keys = []
        for f in m.files:
            if f.bucket == bucket:
                keys.append(f.key)
                commits[f.key].append(Commit(name, f.etag, f.size, m.committed_ms))
        seen.append(Seen(marker_name, tag, m.first, m.last, frozenset(keys)))
    why = starts_over(mark, seen) if mark is not None else None
    if why:
        say(f"clean: consumer {name}'s seqs started over ({why}): reading its markers from the first")
        return _markers(cm, bucket, None, say)
    n = len(seen)
    say(f"clean: read {n:,} commit marker{'' if n == 1 else 's'} of consumer {name}" +
        (f", those after {mark.name}" if mark else ""))
    return mark, seen, commits
