"""What the source does once batches are known to be in the sink: reads and logs their quarantine records,
writes a commit marker of the files read cleanly (state/markers.py: what the stack's source cleaner reads),
marks them committed in the index (with each problem file's record), and now and then forgets committed
files older than maxFileAge. Spark's `commit` lags a batch behind, so the start offset of the next plan is
the signal (controller.py)."""
from __future__ import annotations

import logging
import time

from ..config.source_options import SourceOptions
from ..core.counters import Stat
from ..core.units import now_ms
from ..core.vocabulary import PROBLEM_STATUSES, FileStatus
from ..state import markers, quarantine
from ..state.store import open_store
from .batch_files import BatchFiles
from .ledger import Ledger

log = logging.getLogger("s3sqs")
TRIM_INTERVAL_SECONDS = 300    # how often committed files older than maxFileAge are forgotten


def trim_due(last_trim_monotonic: float | None, now_monotonic: float) -> bool:
    return last_trim_monotonic is None or now_monotonic - last_trim_monotonic > TRIM_INTERVAL_SECONDS


def trim_cutoff_ms(now_ms: int, max_file_age_seconds: float) -> int:
    """Committed files whose event is older than this are forgotten: they are past maxFileAge, so a
    duplicate announcement of one is filtered as too old rather than ingested again."""
    return int(now_ms - max_file_age_seconds * 1000)


class Commits:
    def __init__(self, opts: SourceOptions, ledger: Ledger, batch_files: BatchFiles | None = None):
        self.opts, self.ledger = opts, ledger
        self.batch_files = batch_files or BatchFiles()
        self.quarantine = open_store(opts.quarantine_location, ledger.s3)
        self._last_trim: float | None = None

    def acknowledge(self, committed: int) -> None:
        """Everything up to `committed` is in the sink. Call with the ledger's lock held."""
        idx = self.ledger.index
        if committed <= idx.committed_seq:
            return
        problems = []
        for end in idx.batch_ends(idx.committed_seq, committed):
            records = quarantine.read_records(self.quarantine, end)
            problems.extend(records)
            self._log(end, records)
        at = now_ms()
        self._mark(idx.committed_seq + 1, committed, at, problems)
        idx.set_committed(committed, at, problems)
        if trim_due(self._last_trim, time.monotonic()):
            self._last_trim = time.monotonic()
            n = idx.trim_older_than(trim_cutoff_ms(now_ms(), self.opts.max_file_age_seconds))
            if n:
                log.info("s3-sqs: forgot %d files older than maxFileAge", n)

    def _mark(self, first: int, last: int, at: int, problems: list[dict]) -> None:
        """The commit marker, before the index says committed: a run that dies in between writes it again."""
        bad = {int(r["seq"]) for r in problems if r.get("status") in PROBLEM_STATUSES}
        files = self.batch_files.between(first - 1, last)
        if files is None:  # planned by an earlier run
            files = self.ledger.index.iter_records(first, last)
        marker = markers.marker_of(first, last, at, (f for f in files if f.seq not in bad))
        if marker is not None:
            markers.write(self.ledger.snapshots.store, marker)
        self.batch_files.forget_upto(last)

    def _log(self, end: int, records: list[dict]) -> None:
        if not records:
            return
        t = quarantine.tally(records)
        log.warning("s3-sqs: batch ending at offset %d committed with %d files quarantined, %d missing, %d malformed "
                    "rows; records in %s/%s", end, t[FileStatus.QUARANTINED], t[FileStatus.MISSING],
                    t[FileStatus.MALFORMED_ROWS], self.opts.quarantine_location, quarantine.batch_dir(end))
        self.ledger.index.add_stats({Stat.FILES_QUARANTINED: t[FileStatus.QUARANTINED],
                                     Stat.FILES_MISSING: t[FileStatus.MISSING],
                                     Stat.ROWS_MALFORMED: t[FileStatus.MALFORMED_ROWS]})
