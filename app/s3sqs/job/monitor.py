"""After each batch, the job tells its watchers what happened: one line for people (batch_line.py) and one EMF
document for CloudWatch (metrics.py), both on stdout, which EMR Serverless ships to the consumer's log
group. This module only reads (the source's status, the batch's quarantine records) and prints."""
from __future__ import annotations

import sys

from ..config.options import name_in_queue_url
from ..core.units import now_ms
from ..state.snapshots import read_status
from . import metrics
from .batch_line import batch_line
from .completion import CompletionCheck, Progress


class BatchMonitor:
    """Reports each batch Spark completed once, in order; reuses the CompletionCheck's clients."""

    def __init__(self, check: CompletionCheck, queue_url: str, out=None, rows_of=None):
        self.check = check
        # batch id -> its rows, where Spark's count is not the rows (a direct write's batch rows are files)
        self.rows_of = rows_of
        self.queue = name_in_queue_url(queue_url)
        self.out = out or sys.stdout
        self.status = read_status(check.state)  # counters before the first report: not this run's doing
        self.reported: int | None = None  # the last batch id reported

    def unreported(self, progresses) -> list[dict]:
        """The batches in `progresses` (Spark's recentProgress) not reported yet."""
        return [p for p in progresses or () if metrics.is_batch(p)
                and (self.reported is None or p["batchId"] > self.reported)]

    def report(self, progresses, state: Progress | None) -> None:
        """Report the batches in `progresses` not reported yet. `state` is the CompletionCheck's reading
        just taken, with the queue's depth: the backlog, and the source's status (not read again here)."""
        new = self.unreported(progresses)
        if not new:
            return
        if state is None or state.queued is None:
            raise ValueError("a batch report needs a reading of the queue's depth")
        status = state.status
        for p in new:
            m = metrics.batch_metrics(p, self.status, status, self.check.problems(metrics.batch_range(p)[1]),
                                      state.depth, state.recorded, state.logged,
                                      self.rows_of(p["batchId"]) if self.rows_of else None)
            self.status = status  # what the source did since the last report goes to the first batch only
            self._print(batch_line(m))
            self._print(metrics.emf_line(metrics.emf_document(m, self.queue, now_ms())))
            self.reported = p["batchId"]

    def failed(self) -> None:
        """The query failed: one more failed attempt of this consumer's job, for the alarm."""
        self._print(metrics.emf_line(metrics.failure_document(self.queue, now_ms())))

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)
