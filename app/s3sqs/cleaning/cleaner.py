"""One run of the source cleaner: read every consumer's commit markers (read-only), judge each committed key
by the fan-out rule (rule.py), and, when asked to act, archive or delete what is due (actions.py), writing
down what was done (journal.py). Without `apply` nothing changes: the rows say what would be done.

The candidates are only the keys some consumer committed: the cleaner never lists the source bucket.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..config.clean import ARCHIVE, CLEAN_SOURCE, CleanSettings, CleanSettingsError, archive_overlap
from ..core.units import now_ms as wall_ms
from ..core.vocabulary import CleanSource, CleanStatus
from ..state import markers
from ..state.store import Store
from . import actions, journal
from .rule import Commit, Consumer, Verdict, judge

JOURNAL_CHUNK = 100
WORKERS = 8   # keys judged (and cleaned) at once: each costs a few S3 round trips
PAGE = 512    # keys handed to the workers at a time, so a run of millions holds few futures


@dataclass(frozen=True)
class ConsumerMarkers:
    """A consumer of the stack, and the store its commit markers are in (its state location)."""
    consumer: Consumer
    store: Store


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
            until: float | None = None) -> Counter:
        """Judge every committed key (and act on those due, with `apply`, at most `limit` of them); returns the
        count of keys by status. Keys are judged `workers` at a time (each costs a few S3 calls), and their rows
        come out in key order. `until` (time.monotonic()): no new page of keys is started after it, so a run
        with a time limit (the scheduled cleaner) ends cleanly; the next run takes up the rest."""
        commits = self._commits()
        cleaned = self._cleaned()
        keys = sorted(commits)
        counts: Counter = Counter()
        run_id, chunk, done = f"{self.clock():013d}-{uuid.uuid4().hex[:8]}", 0, []
        self._budget, self._lock = limit, threading.Lock()
        last_said = time.monotonic()

        def judge_one(key: str):
            return self._row(key, commits[key], cleaned.get(key, ()), apply)
        try:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="clean") as pool:
                for start in range(0, len(keys), PAGE):
                    if until is not None and time.monotonic() >= until:
                        self.progress(f"clean: out of time after {start:,} of {len(keys):,} committed files; the "
                                      "next run takes up the rest")
                        break
                    for row, record in pool.map(judge_one, keys[start:start + PAGE]):
                        counts[row.status] += 1
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
        return counts

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
        head = actions.head(self.s3, self.bucket, key)
        v: Verdict = judge(key, [c.consumer for c in self.consumers], commits, head,
                           int(self.settings.retention_seconds * 1000), self.clock())
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

    def _commits(self) -> dict[str, list[Commit]]:
        out: dict[str, list[Commit]] = defaultdict(list)
        for cm in self.consumers:
            n = 0
            for m in markers.read_all(cm.store):
                n += 1
                for f in m.files:
                    if f.bucket == self.bucket:
                        out[f.key].append(Commit(cm.consumer.name, f.etag, f.size, m.committed_ms))
            self.progress(f"clean: read {n:,} commit marker{'' if n == 1 else 's'} of consumer {cm.consumer.name}")
        return out

    def _cleaned(self) -> dict[str, tuple]:
        out: dict[str, list] = defaultdict(list)
        for c in journal.read_all(self.journal_store):
            if c.bucket == self.bucket:
                out[c.key].append(c)
        return {k: tuple(sorted(v, key=lambda c: c.at_ms)) for k, v in out.items()}

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
