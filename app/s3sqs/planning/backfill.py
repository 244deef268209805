"""The backfill: one background thread that lists basePath and records what is new through the same index
as announced files, so a file both listed and announced lands once. On the first start with
includeExistingFiles, then every backfillInterval (`backfill_due` says when). The listing is done when it
reaches the end; a run that dies before then lists again on its next start. With backfillFromInventory,
the thread first reads that S3 Inventory report (inventory.py), once, resuming where it stopped."""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..config.source_options import SourceOptions
from ..core.counters import Stat
from ..core.units import human_duration, now_ms
from . import listing
from .fates import NEW, TOO_OLD, decide
from .ledger import Ledger

if TYPE_CHECKING:
    from .inventory import InventoryBackfill

log = logging.getLogger("s3sqs")
DONE = "backfill_done_ms"  # when the last complete listing started
PROGRESS_EVERY = 10_000    # files listed between two progress lines


def backfill_due(last_done_ms: int | None, now_ms: int, include_existing: bool,
                 interval_seconds: float | None) -> bool:
    """Whether to list basePath now: on the first start when asked to include existing files (or to list on
    an interval), then every interval after the last complete listing began."""
    if last_done_ms is None:
        return include_existing or interval_seconds is not None
    return interval_seconds is not None and now_ms - last_done_ms >= interval_seconds * 1000


class Backfill:
    def __init__(self, opts: SourceOptions, ledger: Ledger, stopping: threading.Event):
        self.opts, self.ledger, self.stopping = opts, ledger, stopping
        self.error: BaseException | None = None
        self.pages = 0
        self._thread: threading.Thread | None = None

    def due(self) -> bool:
        last = self.ledger.index.meta(DONE)
        return backfill_due(None if last is None else int(last), now_ms(), self.opts.include_existing_files,
                                    self.opts.backfill_interval_seconds)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        inventory = self._inventory()
        listing_due = self.opts.base_path is not None and self.due()
        if (inventory is None or not inventory.pending()) and not listing_due:
            return
        self.ledger.set_backfilling(True)
        self._thread = threading.Thread(target=self._guarded, args=(inventory, listing_due), name="s3sqs-backfill",
                                        daemon=True)
        self._thread.start()

    def run_now(self) -> None:
        """In the caller's thread (Trigger.AvailableNow): the report, then the listing, if either is due."""
        inventory = self._inventory()
        if inventory is not None and inventory.pending():
            inventory.run(self._chunk_done)
        if self.opts.base_path is not None and self.due():
            self.run()

    def _chunk_done(self) -> None:
        self.pages += 1

    def _inventory(self) -> InventoryBackfill | None:
        uri = self.opts.backfill_from_inventory
        if uri is None:
            return None
        from .inventory import InventoryBackfill  # its CSV and Parquet readers, for a source that has a report
        return InventoryBackfill(uri, self.opts.base_path, self.ledger, self.opts, self.stopping)

    def _guarded(self, inventory: InventoryBackfill | None, listing_due: bool) -> None:
        what = self.opts.base_path
        try:
            if inventory is not None and inventory.pending():
                what = inventory.uri
                inventory.run(self._chunk_done)
            if listing_due and not self.stopping.is_set():
                what = self.opts.base_path
                self.run()
        except BaseException as e:  # the next offset call raises it: the query fails, naming the cause
            log.error("s3-sqs: backfill from %s failed: %s: %s", what, type(e).__name__, e)
            self.error = e
        finally:
            self.ledger.set_backfilling(False)

    def run(self) -> None:
        o, ledger = self.opts, self.ledger
        started, listed, new, old, t0 = now_ms(), 0, 0, 0, time.monotonic()
        log.info("s3-sqs: listing %s for files not announced, those modified within maxFileAge (%s)", o.base_path,
                 human_duration(o.max_file_age_seconds))
        for page in listing.list_pages(o.base_path, ledger.s3):
            with ledger.lock:
                decisions = decide(page, ledger.index.seq_of, datetime.now(timezone.utc),
                                           o.max_file_age_seconds, o.path_glob_filter, o.allow_overwrites)
                fresh = [(d.dedup_key, d.file) for d in decisions if d.outcome == NEW]
                ledger.record(fresh, {Stat.LISTED: len(page), Stat.LISTED_NEW: len(fresh)})
            listed, new = listed + len(page), new + len(fresh)
            old += sum(1 for d in decisions if d.outcome == TOO_OLD)
            self.pages += 1
            if self.stopping.is_set():
                return
            if listed % PROGRESS_EVERY < listing.PAGE:
                log.info("s3-sqs: listing %s: %d files so far, %d new (%.0f files/s)", o.base_path, listed, new,
                         listed / max(1e-3, time.monotonic() - t0))
        with ledger.lock:
            ledger.index.set_meta(DONE, str(started).encode())
            ledger.persist()
        log.info("s3-sqs: listed %s: %d files, %d new, in %.1f s", o.base_path, listed, new, time.monotonic() - t0)
        if old:  # the limit applies to listed files as to announced ones: say so, with the count
            log.warning("s3-sqs: listing %s skipped %d files modified more than maxFileAge (%s) ago: they are not "
                        "ingested. To take them too, set a larger maxFileAge before the first start (or with "
                        "backfillInterval, before its next listing)", o.base_path, old,
                        human_duration(o.max_file_age_seconds))


