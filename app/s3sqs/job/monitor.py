"""The job watches its running query (`BatchMonitor.watch`): after each batch it tells its watchers what
happened, one line for people (batch_line.py) and one EMF document for CloudWatch (metrics.py), both on
stdout, which EMR Serverless ships to the consumer's log group; with --until-drained it stops the query once
everything announced is in the sink. This module only reads (the query's progress, the source's status, the
batch's quarantine records) and prints."""
from __future__ import annotations

import logging
import sys
import time

from ..config.options import name_in_queue_url
from ..core.units import now_ms
from ..state.snapshots import read_status
from . import metrics
from .batch_line import batch_line
from ..core.errors import S3SqsError
from .completion import CompletionCheck, Progress

log = logging.getLogger("s3sqs.job")
IDLE_CHECK_SECONDS = 2   # a stream's progress lines and metrics
DRAIN_CHECK_SECONDS = 0.5  # --until-drained: how soon a drained queue and a committed batch end the run


class QueryFailed(S3SqsError):
    """The streaming query stopped with an error."""


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

    def watch(self, query, until_drained: bool, idle_checks: int) -> None:
        """Report each batch until the query stops, or (`until_drained`) until `idle_checks` readings in a row
        find everything announced in the sink; raises QueryFailed if the query failed."""
        idle = 0
        while query.isActive:
            time.sleep(DRAIN_CHECK_SECONDS if until_drained else IDLE_CHECK_SECONDS)
            progresses = query.recentProgress
            state = self.check.when_needed(bool(self.unreported(progresses)), until_drained)
            self.report(progresses, state)  # a line and an EMF document per batch
            if not until_drained:
                continue
            # Not before the first trigger: until the source's first offset call, a backfill it is to start
            # (includeExistingFiles, an inventory report) is in no status yet, and an empty queue looks drained.
            started = query.lastProgress is not None
            idle = idle + 1 if started and state.drained else 0
            log.debug("until drained: waiting for %s", state if started else "the first trigger")
            if idle >= idle_checks:
                print("[job] queue drained and every planned batch committed; stopping", flush=True)
                break
        if query.exception():  # one more failed attempt of this consumer's job, for the alarm
            self._print(metrics.emf_line(metrics.failure_document(self.queue, now_ms())))
            raise QueryFailed(str(query.exception()))

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

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)
