"""Is everything announced so far in the sink? The answer `--until-drained` stops on.

It takes three facts, read in this order: the queue is empty (nothing visible, in flight or delayed) and
no backfill is running; every file the source recorded is in a logged offset (a message is only deleted once its file is
durable in the index, so an empty queue means the index has every file); and that offset has its
commit in Spark's checkpoint, and the source has recorded that commit (its commit marker, which the source
cleaner reads: Spark tells the source a batch is committed only at the next trigger, so a run that stopped
at Spark's commit would leave its last batch out of the markers until its next run). Reading the queue
first makes the later reads at least as new.

The queue is asked only when its answer can matter (`CompletionCheck.when_needed`): while a batch is
planned and not committed, no depth can make the run drained, and one GetQueueAttributes every half
second would be calls for nothing (on the local stand-in, a tenth of a second of its CPU each while
messages are in flight).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config.source_options import SourceOptions
from ..core import aws
from ..planning.queue import QueueClient, sqs_client
from ..state import quarantine
from ..state.checkpoint import newest_batch
from ..state.snapshots import Snapshots, read_status
from ..state.store import open_store


@dataclass(frozen=True)
class Progress:
    queued: int | None       # messages visible, in flight or delayed; None: the queue was not asked
    recorded: int            # files the source has recorded (its last seq)
    logged: int | None       # end offset of Spark's newest logged batch; None before the first
    batch_id: int | None     # that batch's id
    committed: bool          # whether Spark committed that batch
    depth: dict = field(default_factory=dict)  # the queue's attributes behind `queued` (visible, in flight...)
    status: dict = field(default_factory=dict)  # the source's durable status behind `recorded` (its counters)

    @property
    def settled(self) -> bool:
        """Whether all but the queue say done: no backfill, every recorded file logged, that batch committed."""
        return not self.status.get("backfilling") and self.recorded == (self.logged or 0) \
            and (self.batch_id is None or self.committed) and self.marked

    @property
    def marked(self) -> bool:
        """Whether the source has recorded the commit of every logged offset (written its commit marker)."""
        return self.status.get("committed_seq", 0) >= (self.logged or 0)

    @property
    def drained(self) -> bool:
        return self.queued == 0 and self.settled

    def __str__(self) -> str:
        """What a --until-drained run is still waiting for (made only when a debug log line shows it)."""
        if self.queued:
            return f"{self.queued} messages in the queue"
        if self.status.get("backfilling"):
            return "the backfill (a listing of basePath or an inventory report) to finish"
        if self.recorded != (self.logged or 0):
            return f"files up to offset {self.recorded} to be planned (logged: {self.logged or 0})"
        if self.batch_id is not None and not self.committed:
            return f"batch {self.batch_id} to be committed"
        if not self.marked:
            return f"the source to record the commit of batch {self.batch_id} (at the next trigger)"
        if self.queued is None:
            return "the queue's depth to be read"
        return "nothing"


class CompletionCheck:
    """Reads the three facts for one source and checkpoint; clients are made once."""

    def __init__(self, opts: SourceOptions, checkpoint: str):
        self.queue = QueueClient(sqs_client(opts.endpoint, 1), opts.queue_url, opts.visibility_timeout_seconds, 1)
        s3 = aws.lazy_client("s3", opts.endpoint)
        self.state = Snapshots(open_store(opts.state_location, s3))
        self.checkpoint = open_store(checkpoint, s3)
        self.quarantine = open_store(opts.quarantine_location, s3)

    def __call__(self, queue: bool = True) -> Progress:
        depth = self.queue.depth() if queue else {}
        status = read_status(self.state)
        batch, logged, committed = newest_batch(self.checkpoint)
        return Progress(sum(depth.values()) if queue else None, status["last_seq"], logged, batch, committed, depth,
                        status)

    def when_needed(self, new_batches: bool, until_drained: bool) -> Progress | None:
        """The reading one turn of the job's loop needs: all three facts for a batch to report (its line
        gives the backlog); for --until-drained, the source and checkpoint, and the queue too once they
        say done (then read again after it, in the order above); nothing for a stream without an end
        between batches."""
        if new_batches:
            return self()
        if not until_drained:
            return None
        local = self(queue=False)
        return self() if local.settled else local

    def problems(self, batch_end: int) -> dict:
        """Files quarantined or missing, malformed rows and files with new columns in the batch ending at
        `batch_end` (FileStatus keys), and the first malformed row's reason ("first_reason")."""
        records = quarantine.read_records(self.quarantine, batch_end)
        return {**quarantine.tally(records), "first_reason": quarantine.first_reason(records)}
