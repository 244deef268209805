"""The file index and its durable snapshots, shared by the intake, the backfill and Spark's offset calls
under one lock. Nothing here decides anything: the others say what to record, the ledger records it and
makes it durable (a snapshot to the state location) before they act on it."""
from __future__ import annotations

import logging
import threading
from collections import Counter

from ..config.source_options import SourceOptions
from ..core import aws
from ..core.counters import Stat
from ..core.errors import StateError
from ..core.files import S3File
from ..state.snapshots import Snapshots, open_index
from ..state.store import open_store
from .unplanned import Unplanned

log = logging.getLogger("s3sqs")


class Ledger:
    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.lock = threading.RLock()
        self.s3 = aws.lazy_client("s3", opts.endpoint)
        self.snapshots = Snapshots(open_store(opts.state_location, self.s3))
        self.index, self.work_dir = open_index(self.snapshots)
        self.since_batch: Counter = Counter()  # what the intake did since the last planned batch, for its log line
        self.sealed = False  # set when the process is ending: the state belongs to the next run
        self.fresh: list[tuple[int, int]] = []  # (event ms, seq) of files announced since the last plan
        self.backfilling = False  # a listing or an inventory report is being recorded; published in snapshots
        self.unplanned = Unplanned()  # the files recorded here and not planned yet, for the next plans

    def record(self, new_files: list[tuple[str, S3File]], counts: dict[str, int],
               extra_meta: dict[str, bytes] | None = None, announced: bool = False, durable: bool = True) -> None:
        """Number the new files, count what happened, and make the files durable before returning (with
        `durable` False, the caller calls `persist_unless_sealed` before it acts on them).
        `announced`: they came in messages, not from a listing (latestFirst takes those first)."""
        with self.lock:
            if self.sealed:
                raise StateError("the source is stopping: nothing more is recorded (the next run records it)")
            if new_files or extra_meta:
                numbered = self.index.add_files(new_files, counts, extra_meta)
                self.unplanned.add(numbered)
                if announced and self.opts.latest_first:
                    self.fresh.extend((f.event_ms or 0, f.seq) for f in numbered)
                if durable:
                    self.persist()
            else:
                self.index.add_stats(counts)  # saved with the next snapshot
            self.since_batch.update(counts)

    def persist(self) -> None:
        """Snapshot the index to the state location if anything changed since the last snapshot."""
        with self.lock:
            idx = self.index
            if not idx.dirty:
                return
            idx.save_stats()
            snap = self.snapshots.save(idx.db, self.work_dir, {**idx.counters(), "stats": idx.stats,
                                                               "backfilling": self.backfilling})
            # Counted into the next snapshot: the cost of durability, for metrics.
            idx.note_stats({Stat.SNAPSHOTS: 1, Stat.SNAPSHOT_MS: int(snap.seconds * 1000),
                            Stat.SNAPSHOT_BYTES: snap.bytes_uploaded})
            idx.dirty = False
            log.debug("s3-sqs: state v%d saved (%d files tracked): %d files, %d bytes in %.3f s",
                      snap.version, idx.last_seq, snap.files_uploaded, snap.bytes_uploaded, snap.seconds)

    def persist_unless_sealed(self) -> bool:
        """Persist, unless the process is ending (the next run may be restoring the state already): then
        what was recorded and not snapshotted is not durable, and False says so."""
        with self.lock:
            if self.sealed:
                return False
            self.persist()
            return True

    def set_backfilling(self, on: bool) -> None:
        """Published with the next snapshot, at once: --until-drained waits while a backfill runs."""
        with self.lock:
            if self.backfilling != on and not self.sealed:
                self.backfilling = on
                self.index.dirty = True
                self.persist()

    def take_fresh(self) -> list[int]:
        """The seqs of the files announced since the last plan, oldest first by their events' times: SQS
        delivers in no order, so a file announced last may have been received, and numbered, first."""
        with self.lock:
            out, self.fresh = self.fresh, []
            return [seq for _, seq in sorted(out)]

    def take_since_batch(self) -> Counter:
        with self.lock:
            c, self.since_batch = self.since_batch, Counter()
            return c

    def seal(self) -> None:
        """Record nothing more (after a record under way, which holds the lock): the process is ending and
        the next run may already be restoring the state."""
        with self.lock:
            self.sealed = True

    def close(self) -> None:
        with self.lock:
            self.index.db.close()
