"""One run of the source cleaner: read the consumers' commit markers (read-only), judge each committed key
by the fan-out rule (rule.py), and, when asked to act, archive or delete what is due (actions.py), writing
down what was done (journal.py). Without `apply` nothing changes: the rows say what would be done.

The candidates are only the keys some consumer committed: the cleaner never lists the source bucket. A key
is looked at in the source (HEAD) only when its commits make it due. A run that applies starts from the
progress of the last one (progress.py: each consumer's markers after its watermark, the journal's chunks
still needed) and writes its own at the end; a dry run reads everything, to list every committed file.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..config.clean import ARCHIVE, CLEAN_SOURCE, CleanSettings, CleanSettingsError, archive_overlap
from ..core.units import now_ms as wall_ms
from ..core.vocabulary import CleanSource, CleanStatus
from ..state.store import Store
from . import actions, history, journal, progress
from .history import ConsumerMarkers
from .rule import Commit, Verdict, by_markers, judge

JOURNAL_CHUNK = 100
WORKERS = 8   # keys judged (and cleaned) at once: each costs a few S3 round trips
PAGE = 512    # keys handed to the workers at a time, so a run of millions holds few futures


__all__ = ["Cleaner", "ConsumerMarkers", "Row", "summary"]


@dataclass(frozen=True)
class Row:
    """One key's cleaning status, for source-state clean."""
    bucket: str
    key: str
    status: CleanStatus
    detail: str
    at_ms: int | None
    size: int | None = None


class Cleaner:
    def __init__(self, s3, settings: CleanSettings, source_bucket: str, consumers: list[ConsumerMarkers],
                 journal_store: Store, *, clock: Callable[[], int] = wall_ms,
                 progress: Callable[[str], None] | None = None, progress_seconds: float = 2.0, workers: int = WORKERS):
        if not settings.enabled:
            raise CleanSettingsError(CLEAN_SOURCE, "off for this stack: nothing to clean; set sourceCleaning in "
                                                   "cdk.json and deploy")
        overlap = archive_overlap(settings, source_bucket, [c.consumer.prefix for c in consumers])
        if overlap:
            raise CleanSettingsError(ARCHIVE, overlap)
        self.s3, self.settings, self.bucket = s3, settings, source_bucket
        self.consumers, self.journal_store = consumers, journal_store
        self.clock, self.progress, self.progress_seconds = clock, progress or (lambda _: None), progress_seconds
        self.workers = workers

    def run(self, apply: bool, on_row: Callable[[Row], None] = lambda _: None, limit: int | None = None,
            until: float | None = None, *, resume: bool | None = None) -> Counter:
        """Judge the committed keys (and act on those due, with `apply`, at most `limit` of them); returns the
        count of keys by status. Keys are judged `workers` at a time, and their rows come out in key order.
        `until` (time.monotonic()): no new page of keys is started after it, so a run with a time limit (the
        scheduled cleaner) ends cleanly; the next run takes up the rest. `resume` (default: `apply`): start
        from the progress of the last run that applied, rather than from every marker and the whole journal."""
        start = progress.read(self.journal_store) if (apply if resume is None else resume) else progress.Progress()
        read = history.read(self.consumers, self.bucket, self.journal_store, start, self.progress)
        commits, cleaned = read.commits, read.cleaned
        keys = sorted(commits)
        statuses: dict[str, CleanStatus] = {}
        counts: Counter = Counter()
        # a chunk's name starts with the wall time, so chunks list in the order they were written
        run_id, chunk, done = f"{wall_ms():013d}-{uuid.uuid4().hex[:8]}", 0, []
        self._budget, self._lock = limit, threading.Lock()
        last_said = time.monotonic()

        def judge_one(key: str):
            return self._row(key, commits[key], cleaned.get(key, ()), apply)
        try:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="clean") as pool:
                for first in range(0, len(keys), PAGE):
                    if until is not None and time.monotonic() >= until:
                        self.progress(f"clean: out of time after {first:,} of {len(keys):,} committed files; the "
                                      "next run takes up the rest")
                        break
                    for row, record in pool.map(judge_one, keys[first:first + PAGE]):
                        counts[row.status] += 1
                        statuses[row.key] = row.status
                        if record is not None:
                            done.append(record)
                        on_row(row)
                        if len(done) >= JOURNAL_CHUNK:
                            journal.write(self.journal_store, run_id, chunk, done)
                            chunk, done = chunk + 1, []
                        if time.monotonic() - last_said >= self.progress_seconds:
                            last_said = time.monotonic()
                            self.progress(f"clean: {sum(counts.values()):,} of {len(keys):,} committed files judged; "
                                          f"{summary(counts)}")
        finally:  # what was done is written down, even when a call fails part way
            journal.write(self.journal_store, run_id, chunk, done)
        if apply:  # only once the journal holds what was done: a kill before this reads more next time
            after = self._next(read, statuses)
            if after != start:
                progress.write(self.journal_store, after)
        return counts

    def _next(self, read: history.History, statuses: dict) -> progress.Progress:
        """The progress after this run: each consumer's watermark past what is settled, and the journal's."""
        marks, pending = {}, set()
        for cm in self.consumers:
            name = cm.consumer.name
            mark = progress.advance(history.location_of(cm.store), read.starts[name], read.seen[name], statuses)
            if mark is not None:
                marks[name] = mark
            pending.update(k for s in progress.after(mark, read.seen[name]) for k in s.keys)
        return progress.Progress(marks, progress.journal_after(read.journal_from, read.chunks, pending))

    def _spend(self) -> bool:
        """One file's worth of --limit, if any is left."""
        with self._lock:
            if self._budget is None:
                return True
            if self._budget <= 0:
                return False
            self._budget -= 1
            return True

    def _row(self, key: str, commits: list[Commit], cleaned: tuple, apply: bool) -> tuple[Row, journal.Cleaned | None]:
        """The key's status, and the journal record of what this run did to it (None: nothing)."""
        last_commit = max(c.committed_ms for c in commits)
        past = [c for c in cleaned if c.at_ms >= last_commit]  # cleaned after the last commit: nothing newer
        if past:
            c = past[-1]
            return Row(self.bucket, key, CleanStatus(c.action), _done(c.etag, c.archive_uri), c.at_ms, c.size), None
        readers, now = [c.consumer for c in self.consumers], self.clock()
        retention_ms = int(self.settings.retention_seconds * 1000)
        v: Verdict = by_markers(key, readers, commits, retention_ms, now)
        if v.status != CleanStatus.DUE:  # decided by the commits alone: no request
            newest = max(commits, key=lambda c: c.committed_ms)
            return Row(self.bucket, key, v.status, v.detail, v.at_ms, newest.size), None
        head = actions.head(self.s3, self.bucket, key)
        v = judge(key, readers, commits, head, retention_ms, now)
        to = self._archive_uri(key)
        if v.status == CleanStatus.GONE and to:
            found = self._in_archive(key, commits)
            if found is not None:  # archived by a run that died before writing its journal
                record = journal.Cleaned(self.bucket, key, found.etag.strip('"'), found.size,
                                         str(CleanStatus.ARCHIVED), self.clock(), to)
                return Row(self.bucket, key, CleanStatus.ARCHIVED, _done(record.etag, to) + " (when, the run that "
                           "did it did not record)", None, found.size), (record if apply else None)
        if v.status != CleanStatus.DUE:
            return Row(self.bucket, key, v.status, v.detail, v.at_ms, head.size if head else None), None
        if not (apply and self._spend()):
            would = f"archive to {to}" if to else "delete"
            return Row(self.bucket, key, v.status, f"{v.detail}; would {would}", v.at_ms, head.size), None
        try:
            if to:
                actions.archive(self.s3, self.bucket, key, head, self.settings.archive_bucket,
                                self.settings.archive_key(key))
            else:
                actions.delete(self.s3, self.bucket, key, head)
        except actions.Changed as e:
            return Row(self.bucket, key, CleanStatus.CHANGED, str(e), None, head.size), None
        except actions.CleanError as e:
            return Row(self.bucket, key, CleanStatus.FAILED, str(e), None, head.size), None
        status = CleanStatus.ARCHIVED if to else CleanStatus.DELETED
        record = journal.Cleaned(self.bucket, key, head.etag.strip('"'), head.size, str(status), self.clock(), to)
        return Row(self.bucket, key, status, _done(record.etag, to), record.at_ms, head.size), record

    def _in_archive(self, key: str, commits: list[Commit]):
        """The archive's copy of a key, if it holds one of a committed size."""
        copy = actions.head(self.s3, self.settings.archive_bucket, self.settings.archive_key(key))
        return copy if copy is not None and any(c.size in (None, copy.size) for c in commits) else None

    def _archive_uri(self, key: str) -> str | None:
        if self.settings.mode != CleanSource.ARCHIVE:
            return None
        return f"s3://{self.settings.archive_bucket}/{self.settings.archive_key(key)}"


def _done(etag: str, archive_uri: str | None) -> str:
    return f"eTag {etag}, " + (f"copied to {archive_uri}" if archive_uri else "deleted")


def summary(counts: Counter) -> str:
    """'3 archived, 2 waiting, 1 changed': the statuses met, in CleanStatus's order."""
    return ", ".join(f"{counts[s]:,} {s}" for s in CleanStatus if counts[s]) or "nothing committed"
