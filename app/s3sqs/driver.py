"""Driver-side work of each micro-batch: receive, decide, record durably, acknowledge after commit.

The protocol (see DESIGN.md): every new file gets the next sequence number and is written to the
RocksDB index, and the index is snapshotted to the state location, before an offset that covers it
is returned. A message is deleted only when the offset covering all its files is committed.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone

import boto3
from botocore.config import Config

from . import planner
from .events import MessageParseError, parse_body
from .options import SourceOptions
from .queue import InFlight, Message, QueueClient, sqs_client
from .state import FileIndex, FileRecord, Snapshots, StateError, open_index, u64
from .storage import open_store

log = logging.getLogger("s3sqs")
TRIM_INTERVAL_SECONDS = 300


class ReprocessDryRunComplete(RuntimeError):
    """Raised to stop the query after a reprocess dry run has listed its files."""


@dataclass
class Limit:
    max_files: int | None
    max_bytes: int | None


class Driver:
    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.index: FileIndex | None = None
        self.snapshots: Snapshots | None = None
        self.queue: QueueClient | None = None
        self.inflight: InFlight | None = None
        self.work_dir = None
        self.max_planned_end = 0       # the largest end seen in partitions()
        self.available_now_target: int | None = None
        self._last_trim = 0.0
        self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s3sqs-prefetch")
        self._prefetch: Future | None = None

    # -- lifecycle --
    def open(self) -> None:
        if self.index is not None:
            return
        o = self.opts
        store = open_store(o.state_location, lambda: boto3.session.Session().client(
            "s3", region_name=o.queue_region, endpoint_url=o.endpoint_url,
            config=Config(retries={"max_attempts": o.max_retries + 1, "mode": "standard"})))
        self.snapshots = Snapshots(store)
        self.index, self.work_dir = open_index(self.snapshots)
        self.queue = QueueClient(sqs_client(o.queue_region, o.endpoint_url, o.max_retries, o.max_concurrency),
                                 o.queue_url, o.visibility_timeout_seconds, o.long_poll_wait_seconds,
                                 o.max_concurrency)
        self.inflight = InFlight(self.queue)
        log.info("s3-sqs source on %s: %d files tracked, committed up to %d",
                 o.queue_url, self.index.last_seq, self.index.committed_seq)
        if o.reprocessing:
            self._reprocess()

    # -- offsets --
    def initial_offset(self) -> int:
        self.open()
        return self.index.committed_seq

    def latest_offset(self, start: int | None, limit: Limit) -> int:
        self.open()
        idx = self.index
        base = start if start is not None else max(idx.committed_seq, self.max_planned_end)
        self.acknowledge(base)
        receiving = not self.opts.reprocessing and self.available_now_target is None
        if receiving:
            prefetched = self._take_prefetched()
            self.ingest(prefetched)
            pending = idx.last_seq - base
            want = None if limit.max_files is None else limit.max_files - pending
            if want is None or want > 0:
                # Top up; after a prefetch, do not wait a whole long poll on a queue that may be empty.
                self.ingest(self.queue.receive(want, self.opts.queue_fetch_wait_timeout_seconds,
                                               long_poll_first=not prefetched))
        last = idx.last_seq if self.available_now_target is None else min(idx.last_seq, self.available_now_target)
        sizes = idx.iter_sizes(base + 1) if limit.max_bytes is not None else ()
        end = max(base, planner.batch_end(base, last, limit.max_files, limit.max_bytes, sizes))
        self.index.record_batch(base, end)
        self.persist()  # durable before Spark logs the offset
        if receiving:
            self._start_prefetch(None if limit.max_files is None else limit.max_files - (idx.last_seq - end))
        return end

    def _start_prefetch(self, want: int | None) -> None:
        """Receive the next batch's messages while Spark runs this one. They are only held in
        memory (and kept invisible): a crash before they are planned just lets them reappear."""
        if want is not None and want <= 0:
            return

        def fetch() -> list[Message]:
            msgs = self.queue.receive(want, self.opts.queue_fetch_wait_timeout_seconds)
            self.inflight.hold(msgs)
            return msgs
        self._prefetch = self._prefetcher.submit(fetch)

    def _take_prefetched(self) -> list[Message]:
        if self._prefetch is None:
            return []
        future, self._prefetch = self._prefetch, None
        return future.result()  # an SQS failure there fails this trigger, as a direct receive would

    def persist(self) -> None:
        """Snapshot the index to the state location if anything changed since the last snapshot."""
        idx = self.index
        if idx.dirty:
            snap = self.snapshots.save(idx.db, self.work_dir)
            idx.dirty = False
            log.info("s3-sqs: state v%d saved (%d files tracked): %d files, %d bytes in %.3f s",
                     snap.version, idx.last_seq, snap.files_uploaded, snap.bytes_uploaded, snap.seconds)

    def prepare_available_now(self) -> None:
        """Receive until the queue is empty, so the run drains all that was announced at its start."""
        self.open()
        if not self.opts.reprocessing:
            self.ingest(self._take_prefetched())
            while True:
                msgs = self.queue.receive(None, self.opts.queue_fetch_wait_timeout_seconds)
                if not msgs:
                    break
                self.ingest(msgs)
        self.persist()
        self.available_now_target = self.index.last_seq
        log.info("s3-sqs Trigger.AvailableNow: draining up to offset %d", self.available_now_target)

    def files_between(self, start: int, end: int) -> list[FileRecord]:
        """Files of offsets (start, end], from durable state, for planning or replay."""
        self.open()
        if end <= start:
            return []
        records = self.index.records(start + 1, end)
        if len(records) != end - start:
            raise StateError(
                f"the source state in {self.opts.state_location} holds {len(records)} of the {end - start} files of "
                f"offsets ({start}, {end}]; was stateLocation changed or deleted while the checkpoint was kept?")
        self.index.record_batch(start, end)
        self.max_planned_end = max(self.max_planned_end, end)
        return records

    # -- the steps --
    def ingest(self, messages: list[Message]) -> None:
        """Parse, decide, record new files durably, and settle what can be settled now."""
        if not messages:
            return
        self.inflight.discard(messages)  # prefetched ones were held; each is settled again below
        idx, o = self.index, self.opts
        now = datetime.now(timezone.utc)
        stats = {"messages": len(messages)}
        new_files: list[tuple[str, dict]] = []
        plans: list[tuple[Message, list[planner.Decision]]] = []
        delete_now: list[Message] = []
        round_keys: dict[str, int] = {}  # dedup key -> position among new_files
        for m in messages:
            try:
                parsed = parse_body(m.body)
            except MessageParseError as e:
                stats["messages_unparseable"] = stats.get("messages_unparseable", 0) + 1
                action = "left for the dead-letter queue" if o.keep_message_for_consumer_error else "deleted"
                log.error("s3-sqs: message %s cannot be parsed (%s); %s. Body starts: %r",
                          m.message_id, e, action, m.body[:300])
                if not o.keep_message_for_consumer_error:
                    delete_now.append(m)
                continue
            stats["records_ignored"] = stats.get("records_ignored", 0) + len(parsed.ignored)
            decisions = planner.decide(
                parsed.files, lambda k: idx.seq_of(k) if k not in round_keys else -1, now,
                o.max_file_age_seconds, o.path_glob_filter, o.allow_overwrites)
            for d in decisions:
                stats[d.outcome] = stats.get(d.outcome, 0) + 1
                if d.outcome == planner.NEW:
                    round_keys[d.dedup_key] = len(new_files)
                    new_files.append((d.dedup_key, file_fields(d.file)))
                elif d.outcome != planner.DUPLICATE:
                    log.info("s3-sqs: skipping %s (%s)", d.file.uri, d.outcome)
            plans.append((m, decisions))

        seqs = idx.add_files(new_files, stats) if new_files else []
        if new_files:
            log.info("s3-sqs: %d new files (seq %d..%d)", len(new_files), seqs[0], seqs[-1])
        else:
            idx.add_stats(stats)

        for m, decisions in plans:
            ceiling = 0
            useful = False
            for d in decisions:
                if d.outcome == planner.NEW:
                    ceiling = max(ceiling, seqs[round_keys[d.dedup_key]])
                    useful = True
                elif d.outcome == planner.DUPLICATE:
                    seq = d.seen_seq if d.seen_seq not in (None, -1) else seqs[round_keys[d.dedup_key]]
                    ceiling = max(ceiling, seq)
                    useful = True
            if useful and ceiling > idx.committed_seq:
                self.inflight.add(m, ceiling)
            elif useful or not (o.keep_message_for_consumer_error and decisions):
                delete_now.append(m)  # all committed already, or nothing in it to ingest
        self._delete(delete_now)

    def acknowledge(self, committed: int) -> None:
        """Everything up to `committed` is in the sink: delete its messages and trim old state."""
        idx = self.index
        idx.set_committed(committed)
        self._delete(self.inflight.release(committed))
        if time.monotonic() - self._last_trim > TRIM_INTERVAL_SECONDS:
            self._last_trim = time.monotonic()
            cutoff_ms = int((time.time() - self.opts.max_file_age_seconds) * 1000)
            n = idx.trim_older_than(cutoff_ms)
            if n:
                log.info("s3-sqs: forgot %d files older than maxFileAge", n)

    def _delete(self, messages: list[Message]) -> None:
        if messages:
            failed = self.queue.delete(messages)
            self.index.add_stats({"messages_deleted": len(messages) - len(failed)})

    # -- reprocessing --
    def _reprocess(self) -> None:
        o, idx = self.opts, self.index
        batches = idx.batches()
        first, last = o.reprocess_start_batch_id, o.reprocess_end_batch_id
        if last >= len(batches):
            raise StateError(f"reprocessEndBatchId {last} is beyond the {len(batches)} batches in the source state")
        records = [r for s, e in batches[first:last + 1] for r in idx.records(s + 1, e)]
        if o.reprocess_dry_run:
            for r in records:
                log.warning("s3-sqs reprocess dry run: %s\t%s bytes", r.uri, r.size)
            raise ReprocessDryRunComplete(
                f"reprocess dry run: batches {first}..{last} hold {len(records)} files "
                f"({', '.join(r.uri for r in records[:5])}{' ...' if len(records) > 5 else ''}); "
                "set reprocessDryRun=false to ingest them again")
        marker = f"reprocess:{first}-{last}"
        if idx.meta(marker) is not None:
            log.warning("s3-sqs: batches %d..%d were already re-queued; remove the reprocess options to go on "
                        "with new data", first, last)
            return
        fields = [(f"{r.bucket}/{r.key}\x00{marker}", r.fields()) for r in records]
        idx.add_files(fields, {"reprocessed": len(fields)}, {marker: u64(1)})
        self.persist()
        log.warning("s3-sqs: re-queued %d files of batches %d..%d; this run reads no new messages",
                    len(fields), first, last)


def file_fields(f) -> dict:
    """The FileRecord fields of an announced file (everything but its seq)."""
    return {"bucket": f.bucket, "key": f.key, "size": f.size, "etag": f.etag, "version_id": f.version_id,
            "event_ms": int(f.event_time.timestamp() * 1000) if f.event_time else None}
