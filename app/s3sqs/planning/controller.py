"""The source's driver side, as Spark's offset calls see it: opens the state and the queue lazily, starts
the intake and the backfill, and answers initialOffset, latestOffset, partitions and commit.

`latest_offset` plans the next batch from the index (batch_limits sizes it), makes the plan durable, and
returns its end; its `start` tells what is in the sink, so committed batches are acknowledged there
(commits.py). Every decision is a pure function's (fates, batch_limits, partitions); the pieces each own one job: the ledger (index and
snapshots), the intake (receiving, one thread), the backfill (listing, one thread), commits, reprocess.
"""
from __future__ import annotations

import logging
import sys
import threading
import time

from ..config.source_options import SourceOptions
from ..core.counters import Stat
from ..core.errors import StateError
from ..core.files import S3File, dedup_key
from . import batch_limits, reprocess
from .backfill import Backfill
from .batch_files import BatchFiles
from .commits import Commits
from .intake import Intake
from .ledger import Ledger
from .queue import QueueClient, sqs_client

log = logging.getLogger("s3sqs")
LISTING_SETTLE_SECONDS = 2  # the first batch waits this long for a listing under way


class Controller:
    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.ledger: Ledger | None = None
        self.max_planned_end = 0          # the largest end seen in partitions() (Spark 4.0 counts from it)
        self.available_now_target: int | None = None
        self._seen_batches: dict[int, int] = {}   # batches Spark read, to record at the next plan
        self.batch_files = BatchFiles()  # the files of the batches planned and not yet committed
        self._open_lock = threading.Lock()
        self._requeued = False

    def ready(self) -> None:
        """Open, and on a reprocess run re-queue its batches first (once)."""
        self.open()
        if self.opts.reprocessing and not self._requeued:
            self._requeued = True
            reprocess.requeue(self.opts, self.ledger)

    def open(self) -> None:
        with self._open_lock:
            if self.ledger is not None:
                return
            o = self.opts
            self.ledger = ledger = Ledger(o)
            queue = QueueClient(sqs_client(o.endpoint, o.max_concurrency), o.queue_url, o.visibility_timeout_seconds,
                                o.max_concurrency, parallel_deletes=o.endpoint_url is None)
            self.intake = Intake(o, ledger, queue)
            self.backfill = Backfill(o, ledger, self.intake.stopping)
            self.commits = Commits(o, ledger, self.batch_files)
            self.restart_floor = ledger.index.planned_end  # the end of the last plan made before this process
            log.info("s3-sqs source on %s: %d files tracked, committed up to %d (Python %s)",
                     o.queue_url, ledger.index.last_seq, ledger.index.committed_seq, sys.executable)

    def close(self) -> None:
        """Stop the intake and close the index. Spark never calls this (it ends the process); tests and tools do."""
        if self.ledger is not None:
            self.intake.stop()
            self.ledger.close()

    def terminate(self) -> None:
        """The process is ending (Spark stops a query's source with SIGTERM; it never calls stop()): record
        nothing more, and hand back the messages of the receive under way, so that the next run gets them
        now rather than after their visibility timeout."""
        if self.ledger is None:
            return
        self.intake.stopping.set()
        self.intake.room.set()
        self.ledger.seal()
        self.intake.join(self.opts.long_poll_wait_seconds + 5)

    @property
    def index(self):
        return None if self.ledger is None else self.ledger.index

    @property
    def receiving(self) -> bool:
        return not self.opts.reprocessing and self.available_now_target is None

    # -- offsets --
    def initial_offset(self) -> int:
        self.ready()
        return self.ledger.index.committed_seq

    def latest_offset(self, start: int | None, limit: batch_limits.Limit) -> int:
        t0 = time.perf_counter()
        self.ready()
        for error in (self.intake.error, self.backfill.error):
            if error is not None:
                raise error
        if self.receiving:
            self.backfill.start()
            self._start_intake()
        ledger = self.ledger
        with ledger.lock:
            idx = ledger.index
            committed, base = batch_limits.plan_start(start, idx.committed_seq, self.max_planned_end, self.restart_floor)
            for s, e in self._seen_batches.items():
                idx.record_batch(s, e)
            self._seen_batches.clear()
            self.commits.acknowledge(committed)
            last = idx.last_seq if self.available_now_target is None else min(idx.last_seq, self.available_now_target)
            if self.opts.latest_first:
                _fresh_first(ledger, self.opts.allow_overwrites, base, last,
                             limit.max_files if self.receiving else None)
            sizes = idx.iter_sizes(base + 1) if limit.max_bytes is not None else ()
            end = batch_limits.batch_end(base, last, limit, sizes)
            # Kept from their recording, else read once (Spark asks for them next, files_between); Spark 4.0
            # asks again for a batch it planned.
            planned = self.batch_files.between(base, end) or ledger.unplanned.take(base, end) \
                or idx.records(base + 1, end)
            idx.record_batch(base, end, sum(r.size or 0 for r in planned))
            self.batch_files.keep(base, end, planned)
            idx.note_stats(self.intake.calls_since_last())
            idx.note_stats({Stat.PLANS: 1, Stat.PLAN_MS: int((time.perf_counter() - t0) * 1000)})
            ledger.persist()  # durable before Spark logs the offset
            since = ledger.take_since_batch()
        if end > base or since:
            _log_batch(base, end, since)
        self.intake.room.set()
        return end

    def files_between(self, start: int, end: int) -> list[S3File]:
        """Files of offsets (start, end], from durable state, for planning or replay; recorded at the next plan."""
        self.open()
        if end <= start:
            return []
        records = self.batch_files.between(start, end)
        if records is None:  # a replay after a restart, or a batch planned before a newer plan
            with self.ledger.lock:
                records = self.ledger.index.records(start + 1, end)
        if len(records) != end - start:
            raise StateError(
                f"the source state in {self.opts.state_location} holds {len(records)} of the {end - start} files of "
                f"offsets ({start}, {end}]; was stateLocation changed or deleted while the checkpoint was kept?")
        self._seen_batches[start] = end
        self.max_planned_end = max(self.max_planned_end, end)
        return records

    def commit(self, end: int) -> None:
        self.open()
        with self.ledger.lock:
            self.commits.acknowledge(end)

    def prepare_available_now(self) -> None:
        """Receive until the queue is empty, or holds only messages sent after this call, so the run
        drains all that was announced at its start."""
        self.ready()
        if not self.opts.reprocessing:
            self.backfill.run_now()
            self.intake.drain()
        with self.ledger.lock:
            self.ledger.persist()
            self.available_now_target = self.ledger.index.last_seq
        log.info("s3-sqs Trigger.AvailableNow: draining up to offset %d", self.available_now_target)

    def _start_intake(self) -> None:
        """Start receiving, and wait until the queue has run dry (or a batch is full), so the first batch is a
        full one and does not wait a whole trigger; an empty queue costs nothing (the first receive does not
        wait). A short listing goes whole into the first batch."""
        if self.intake.started:
            return
        self.intake.start()
        now = time.monotonic()
        deadline, settle = now + self.opts.queue_fetch_wait_timeout_seconds, now + LISTING_SETTLE_SECONDS

        def listing_pending() -> bool:
            return self.backfill.running and (self.backfill.pages == 0 or time.monotonic() < settle)
        while (not self.intake.caught_up.is_set() and self.intake.alive or listing_pending()) \
                and time.monotonic() < deadline:
            time.sleep(0.02)


def _fresh_first(ledger: Ledger, allow_overwrites: bool, base: int, last: int, max_files: int | None) -> None:
    """latestFirst: renumber pending files so the next batch holds the newest first (batch_limits says
    which). Only files no plan has reached move: no offset Spark has logged changes meaning."""
    if max_files is None:  # nothing to order (AvailableNow, a reprocess run, no limit)
        ledger.take_fresh()
        return
    if base != ledger.index.planned_end:  # a repeated call for a batch already planned (Spark 4.0 makes them)
        return
    fresh = ledger.take_fresh()  # those not taken now are backlog at the next plan
    moves = batch_limits.fresh_first(base, last, fresh, max_files)
    ledger.index.move_files(moves, lambda f: dedup_key(f, allow_overwrites))
    if moves:
        ledger.unplanned.forget()
        log.info("s3-sqs latestFirst: %d fresh files go first", sum(1 for src, dst in moves if dst < src))


def _log_batch(start: int, end: int, since: dict[str, int]) -> None:
    parts = [f"{v} {k.replace('messages_', '')}" for k, v in sorted(since.items()) if k.startswith("messages_")]
    files = f"planned offsets ({start}, {end}]: {end - start} files" if end > start else "no new files"
    log.info("s3-sqs: %s; messages since the last batch: %s", files, ", ".join(parts) or "none")
