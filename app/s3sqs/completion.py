"""Is everything announced so far in the sink? The answer `--until-drained` stops on.

It takes three facts, read in this order: the queue is empty (nothing visible, in flight or delayed);
every file the source recorded is in a logged offset (a message is only deleted once its file is
durable in the index, so an empty queue means the index has every file); and that offset has its
commit in Spark's checkpoint. Reading the queue first makes the later reads at least as new.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from . import quarantine
from .options import SourceOptions
from .queue import QueueClient, sqs_client
from .snapshots import Snapshots, read_status
from .storage import Store, lazy_s3_client, open_store


@dataclass(frozen=True)
class Progress:
    queued: int              # messages visible, in flight or delayed
    recorded: int            # files the source has recorded (its last seq)
    logged: int | None       # end offset of Spark's newest logged batch; None before the first
    batch_id: int | None     # that batch's id
    committed: bool          # whether Spark committed that batch
    depth: dict = field(default_factory=dict)  # the queue's attributes behind `queued` (visible, in flight...)
    status: dict = field(default_factory=dict)  # the source's durable status behind `recorded` (its counters)

    @property
    def drained(self) -> bool:
        return self.queued == 0 and self.recorded == (self.logged or 0) and (self.batch_id is None or self.committed)

    def waiting_for(self) -> str:
        if self.queued:
            return f"{self.queued} messages in the queue"
        if self.recorded != (self.logged or 0):
            return f"files up to offset {self.recorded} to be planned (logged: {self.logged or 0})"
        if self.batch_id is not None and not self.committed:
            return f"batch {self.batch_id} to be committed"
        return "nothing"


def newest_batch(checkpoint: Store) -> tuple[int | None, int | None, bool]:
    """(batch id, end seq, committed) of the newest offset Spark logged in a checkpoint."""
    ids = [int(n.rsplit("/", 1)[-1]) for n in checkpoint.list("offsets") if re.fullmatch(r"offsets/\d+", n)]
    if not ids:
        return None, None, False
    batch = max(ids)
    return batch, logged_end(checkpoint, batch), checkpoint.get_bytes(f"commits/{batch}") is not None


def logged_end(checkpoint: Store, batch: int) -> int:
    """The end seq Spark logged for a batch."""
    raw = checkpoint.get_bytes(f"offsets/{batch}") or b""
    # Spark's offset log: a version line, the batch metadata, then one line per source.
    lines = [ln for ln in raw.decode().splitlines() if ln.strip()]
    try:
        return int(json.loads(lines[-1])["seq"])
    except (IndexError, KeyError, TypeError, ValueError):
        raise ValueError(f"offsets/{batch} in the checkpoint is not an s3-sqs offset log: {raw[:200]!r}") from None


def committed_end(checkpoint: Store) -> tuple[int | None, int | None]:
    """(batch id, end seq) of the newest batch Spark committed to the sink; (None, None) before the first.
    Spark commits batches in order, so every seq up to that end is in the sink."""
    ids = [int(n.rsplit("/", 1)[-1]) for n in checkpoint.list("commits") if re.fullmatch(r"commits/\d+", n)]
    if not ids:
        return None, None
    return max(ids), logged_end(checkpoint, max(ids))


class CompletionCheck:
    """Reads the three facts for one source and checkpoint; clients are made once."""

    def __init__(self, opts: SourceOptions, checkpoint: str):
        self.queue = QueueClient(sqs_client(opts.queue_region, opts.endpoint_url, opts.max_retries, 1),
                                 opts.queue_url, opts.visibility_timeout_seconds, 1)
        s3 = lazy_s3_client(opts.queue_region, opts.endpoint_url, opts.max_retries)
        self.state = Snapshots(open_store(opts.state_location, s3))
        self.checkpoint = open_store(checkpoint, s3)
        self.quarantine = open_store(opts.quarantine_location, s3)

    def __call__(self) -> Progress:
        depth = self.queue.depth()
        status = read_status(self.state)
        batch, logged, committed = newest_batch(self.checkpoint)
        return Progress(sum(depth.values()), status["last_seq"], logged, batch, committed, depth, status)

    def problems(self, batch_end: int) -> dict[str, int]:
        """Files quarantined or missing, and malformed rows, in the batch ending at `batch_end`."""
        records = quarantine.read_records(self.quarantine, batch_end)
        return {"quarantined": sum(r["status"] == quarantine.QUARANTINED for r in records),
                "missing": sum(r["status"] == quarantine.MISSING for r in records),
                "malformed rows": sum(r.get("malformed_rows", 0) for r in records)}
