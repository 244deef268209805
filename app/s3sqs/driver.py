"""Driver-side I/O of the source: the intake in the background, and the offset calls Spark makes.

The intake receives a round of messages, parses them, records every new file under the next sequence
number in the RocksDB index, snapshots the index to the state location, and only then deletes the
messages: once a file is durable in the index it no longer needs its message, so a failing batch never
pushes good files' messages towards the dead-letter queue. `latest_offset` plans the next batch from
the index, makes the plan durable, and returns its end. Every decision is the planner's; this module
only moves data between the queue, the index and Spark.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from . import listing, planner, quarantine
from .events import MessageParseError, ParsedBody, parse_body
from .files import S3File
from .index import FileIndex, StateError, u64
from .options import SourceOptions
from .queue import Message, QueueClient, now_ms, sent_after, sqs_client
from .snapshots import Snapshots, open_index
from .storage import lazy_s3_client, open_store

log = logging.getLogger("s3sqs")
TRIM_INTERVAL_SECONDS = 300
BACKFILL_DONE = "backfill_done_ms"  # when the last complete listing started
LISTING_SETTLE_SECONDS = 2  # the first batch waits this long for a listing under way
FIRST_ROUND_WAIT_SECONDS = 0  # the first receive does not wait, so the first batch comes quickly
DRAIN_WAIT_SECONDS = 1        # ... but "the queue is empty" is only believed after a real (long) poll


def s3_client_factory(o: SourceOptions):
    return lazy_s3_client(o.queue_region, o.endpoint_url, o.max_retries)


def state_store(o: SourceOptions):
    return open_store(o.state_location, s3_client_factory(o))


class ReprocessDryRunComplete(RuntimeError):
    """Raised to stop the query after a reprocess dry run has listed its files."""


class Driver:
    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.index: FileIndex | None = None
        self.snapshots: Snapshots | None = None
        self.queue: QueueClient | None = None
        self.quarantine = None            # where tasks record files they could not read cleanly
        self.work_dir = None
        self.max_planned_end = 0          # the largest end seen in partitions() (Spark 4.0 counts from it)
        self.available_now_target: int | None = None
        self._lock = threading.RLock()    # the index and its snapshots: intake and Spark's calls take turns
        self._seen_batches: dict[int, int] = {}   # batches Spark read, to record at the next plan
        self._since_batch: Counter = Counter()    # what the intake did since the last planned batch
        self._last_trim = 0.0
        self._reprocess_checked = False
        self._intake: threading.Thread | None = None
        self._intake_error: BaseException | None = None
        self._caught_up = threading.Event()  # the intake has seen the queue run dry, or has a batch's worth
        self._backfill: threading.Thread | None = None
        self._backfill_pages = 0
        self._sqs_counted: dict[str, int] = {}
        self._room = threading.Event()    # set when planning made room for the intake
        self._stopping = threading.Event()
        self._deleter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s3sqs-delete")

    # -- lifecycle --
    def open(self) -> None:
        with self._lock:
            if self.index is not None:
                return
            o = self.opts
            s3 = self._s3 = s3_client_factory(o)
            self.snapshots = Snapshots(open_store(o.state_location, s3))
            self.quarantine = open_store(o.quarantine_location, s3)
            self.index, self.work_dir = open_index(self.snapshots)
            self.queue = QueueClient(sqs_client(o.queue_region, o.endpoint_url, o.max_retries, o.max_concurrency),
                                     o.queue_url, o.visibility_timeout_seconds, o.max_concurrency,
                                     parallel_deletes=o.endpoint_url is None)
            log.info("s3-sqs source on %s: %d files tracked, committed up to %d (Python %s)",
                     o.queue_url, self.index.last_seq, self.index.committed_seq, sys.executable)

    def close(self) -> None:
        """Stop the intake and close the index. Spark never calls this (it ends the process); tests and
        tools do. Messages received but not yet recorded come back after their visibility timeout."""
        self._stopping.set()
        self._room.set()
        if self._intake is not None:
            self._intake.join(self.opts.long_poll_wait_seconds + 30)
        self._deleter.shutdown(wait=True)
        with self._lock:
            if self.index is not None:
                self.index.db.close()

    @property
    def receiving(self) -> bool:
        return not self.opts.reprocessing and self.available_now_target is None

    # -- offsets --
    def initial_offset(self) -> int:
        self.open()
        self._check_reprocess()
        return self.index.committed_seq

    def latest_offset(self, start: int | None, limit: planner.Limit) -> int:
        t0 = time.perf_counter()
        self.open()
        self._check_reprocess()
        if self._intake_error is not None:
            raise self._intake_error
        if self.receiving:
            self._start_backfill()
            self._start_intake()
        with self._lock:
            idx = self.index
            base = start if start is not None else max(idx.committed_seq, self.max_planned_end)
            for s, e in self._seen_batches.items():
                idx.record_batch(s, e)
            self._seen_batches.clear()
            self._acknowledge(base)
            last = idx.last_seq if self.available_now_target is None else min(idx.last_seq, self.available_now_target)
            sizes = idx.iter_sizes(base + 1) if limit.max_bytes is not None else ()
            end = planner.batch_end(base, last, limit, sizes)
            idx.record_batch(base, end)
            self._count_sqs_calls()
            idx.note_stats({"plans": 1, "plan_ms": int((time.perf_counter() - t0) * 1000)})
            self.persist()  # durable before Spark logs the offset
            if end > base or self._since_batch:
                self._log_batch(base, end)
        self._room.set()
        return end

    def files_between(self, start: int, end: int) -> list[S3File]:
        """Files of offsets (start, end], from durable state, for planning or replay. Reads only: the
        batch is recorded by the next plan."""
        self.open()
        if end <= start:
            return []
        with self._lock:
            records = self.index.records(start + 1, end)
        if len(records) != end - start:
            raise StateError(
                f"the source state in {self.opts.state_location} holds {len(records)} of the {end - start} files of "
                f"offsets ({start}, {end}]; was stateLocation changed or deleted while the checkpoint was kept?")
        self._seen_batches[start] = end
        self.max_planned_end = max(self.max_planned_end, end)
        return records

    def commit(self, end: int) -> None:
        self.open()
        with self._lock:
            self._acknowledge(end)

    def prepare_available_now(self) -> None:
        """Receive until the queue is empty, or holds only messages sent after this call, so the run
        drains all that was announced at its start."""
        self.open()
        self._check_reprocess()
        if not self.opts.reprocessing:
            if self._backfill_due():
                self._run_backfill()
            started = now_ms()
            polls = 1
            while True:
                msgs = self.queue.receive_round(polls, DRAIN_WAIT_SECONDS)
                self.ingest(msgs)
                if not msgs or all(sent_after(m, started) for m in msgs):
                    break
                polls = planner.next_polls(polls, len(msgs), self.opts.max_concurrency)
        with self._lock:
            self.persist()
            self.available_now_target = self.index.last_seq
        log.info("s3-sqs Trigger.AvailableNow: draining up to offset %d", self.available_now_target)

    def persist(self) -> None:
        """Snapshot the index to the state location if anything changed since the last snapshot."""
        with self._lock:
            idx = self.index
            if idx.dirty:
                idx.save_stats()
                snap = self.snapshots.save(idx.db, self.work_dir, {**idx.counters(), "stats": idx.stats})
                # Counted into the next snapshot: the cost of durability, for metrics.
                idx.note_stats({"snapshots": 1, "snapshot_ms": int(snap.seconds * 1000),
                                "snapshot_bytes": snap.bytes_uploaded})
                idx.dirty = False
                log.debug("s3-sqs: state v%d saved (%d files tracked): %d files, %d bytes in %.3f s",
                          snap.version, idx.last_seq, snap.files_uploaded, snap.bytes_uploaded, snap.seconds)

    # -- the backfill: files already there, or never announced --
    def _backfill_due(self) -> bool:
        o = self.opts
        last = self.index.meta(BACKFILL_DONE)
        if last is None:
            return o.include_existing_files or o.backfill_interval_seconds is not None
        interval = o.backfill_interval_seconds
        return interval is not None and time.time() * 1000 - int(last) >= interval * 1000

    def _start_backfill(self) -> None:
        if self._backfill is not None and self._backfill.is_alive():
            return
        if self.opts.base_path is None or not self._backfill_due():
            return
        self._backfill = threading.Thread(target=self._backfill_guarded, name="s3sqs-backfill", daemon=True)
        self._backfill.start()

    def _backfill_guarded(self) -> None:
        try:
            self._run_backfill()
        except BaseException as e:  # the next offset call raises it: the query fails, naming the cause
            log.error("s3-sqs: listing %s failed: %s: %s", self.opts.base_path, type(e).__name__, e)
            self._intake_error = e

    def _run_backfill(self) -> None:
        """List basePath and record what is new, page by page, through the same index as announced files:
        a file both listed and announced lands once. The listing is done when it reaches the end; a run
        that dies before then lists again on its next start."""
        o = self.opts
        started, listed, new, t0 = int(time.time() * 1000), 0, 0, time.monotonic()
        log.info("s3-sqs: listing %s for files not announced", o.base_path)
        for page in listing.list_pages(o.base_path, self._s3):
            with self._lock:
                decisions = planner.decide(page, self.index.seq_of, datetime.now(timezone.utc),
                                           o.max_file_age_seconds, o.path_glob_filter, o.allow_overwrites)
                fresh = [(d.dedup_key, d.file) for d in decisions if d.outcome == planner.NEW]
                if fresh:
                    self.index.add_files(fresh, {"listed": len(page), "listed_new": len(fresh)})
                    self.persist()
                else:
                    self.index.add_stats({"listed": len(page)})
            listed, new = listed + len(page), new + len(fresh)
            self._backfill_pages += 1
            if self._stopping.is_set():
                return
            if listed % 10_000 < listing.PAGE:
                log.info("s3-sqs: listing %s: %d files so far, %d new (%.0f files/s)", o.base_path, listed, new,
                         listed / max(1e-3, time.monotonic() - t0))
        with self._lock:
            self.index.set_meta(BACKFILL_DONE, str(started).encode())
            self.persist()
        log.info("s3-sqs: listed %s: %d files, %d new, in %.1f s", o.base_path, listed, new, time.monotonic() - t0)

    # -- the intake --
    def _start_intake(self) -> None:
        if self._intake is not None:
            return
        self._intake = threading.Thread(target=self._intake_loop, name="s3sqs-intake", daemon=True)
        self._intake.start()
        # Wait until the queue has run dry (or a batch is full), so the first batch is a full one and does
        # not wait a whole trigger; the first receive does not wait, so an empty queue costs nothing.
        deadline = time.monotonic() + self.opts.queue_fetch_wait_timeout_seconds
        settle = time.monotonic() + LISTING_SETTLE_SECONDS

        def listing_pending() -> bool:  # a short listing goes whole into the first batch
            listing = self._backfill is not None and self._backfill.is_alive()
            return listing and (self._backfill_pages == 0 or time.monotonic() < settle)
        while (not self._caught_up.is_set() and self._intake.is_alive() or listing_pending()) \
                and time.monotonic() < deadline:
            time.sleep(0.02)

    def _intake_loop(self) -> None:
        polls, first = 1, True
        try:
            while not self._stopping.is_set():
                with self._lock:
                    room = planner.intake_room(self.index.last_seq - self.index.planned_end,
                                               self.opts.max_files_per_trigger)
                if room == 0:
                    self._caught_up.set()
                    self._room.wait(1)
                    self._room.clear()
                    continue
                polls = planner.polls_for(room, polls)
                wait = FIRST_ROUND_WAIT_SECONDS if first else planner.poll_wait(polls, self.opts.long_poll_wait_seconds)
                first = False
                msgs = self.queue.receive_round(polls, wait)
                if self._stopping.is_set():
                    break
                self.ingest(msgs)
                full = self.opts.max_files_per_trigger is not None and \
                    self.index.last_seq - self.index.planned_end >= self.opts.max_files_per_trigger
                if full or len(msgs) < polls * planner.SQS_BATCH:
                    self._caught_up.set()
                polls = planner.next_polls(polls, len(msgs), self.opts.max_concurrency)
        except BaseException as e:  # the next offset call raises it: the query fails, naming the cause
            log.error("s3-sqs: reading the queue failed: %s: %s", type(e).__name__, e)
            self._intake_error = e

    def ingest(self, messages: list[Message]) -> None:
        """Decide, record new files durably, then delete the messages that are settled."""
        if not messages:
            return
        o = self.opts
        bodies = [self._parse(m) for m in messages]
        with self._lock:
            r = planner.plan_round(bodies, self.index.seq_of, datetime.now(timezone.utc), o.max_file_age_seconds,
                                   o.path_glob_filter, o.allow_overwrites, o.keep_message_for_consumer_error)
            if r.new_files:
                self.index.add_files(r.new_files, r.counts)
                self.persist()  # the files are durable: their messages can go
            else:
                self.index.add_stats(r.counts)  # saved with the next snapshot
            self._since_batch.update(r.counts)
        for d in r.skipped:
            log.info("s3-sqs: skipping %s (%s)", d.file.uri, d.outcome)
        for m, fate, keep in zip(messages, r.fates, r.keep):
            log.debug("s3-sqs: message %s: %s; %s", m.message_id, fate,
                      "left for the dead-letter queue" if keep else "deleted")
        # Deleting is off the intake's path: the files are durable, and a message whose delete is lost to a
        # crash comes back and dedups.
        self._deleter.submit(self._delete, [m for m, keep in zip(messages, r.keep) if not keep])

    def _delete(self, messages: list[Message]) -> None:
        try:
            failed = self.queue.delete(messages)
        except Exception as e:  # they come back after their visibility timeout and dedup then
            log.warning("s3-sqs: deleting %d settled messages failed (%s: %s); they will be received again and "
                        "ignored as duplicates", len(messages), type(e).__name__, e)
            failed = messages
        if failed:
            with self._lock:
                self.index.add_stats({"messages_not_deleted": len(failed)})

    def _parse(self, m: Message) -> ParsedBody | None:
        try:
            return parse_body(m.body)
        except MessageParseError as e:
            action = "left for the dead-letter queue" if self.opts.keep_message_for_consumer_error else "deleted"
            log.error("s3-sqs: message %s cannot be parsed (%s); %s. Body starts: %r",
                      m.message_id, e, action, m.body[:300])
            return None

    # -- after a commit --
    def _acknowledge(self, committed: int) -> None:
        """Everything up to `committed` is in the sink: record it with what became of files that were not
        read cleanly, and trim old state."""
        idx = self.index
        if committed <= idx.committed_seq:
            return
        problems = []
        for end in idx.batch_ends(idx.committed_seq, committed):
            records = quarantine.read_records(self.quarantine, end)
            problems.extend(records)
            self._log_commit(end, records)
        idx.set_committed(committed, now_ms(), problems)
        if time.monotonic() - self._last_trim > TRIM_INTERVAL_SECONDS:
            self._last_trim = time.monotonic()
            cutoff_ms = int((time.time() - self.opts.max_file_age_seconds) * 1000)
            n = idx.trim_older_than(cutoff_ms)
            if n:
                log.info("s3-sqs: forgot %d files older than maxFileAge", n)

    def _count_sqs_calls(self) -> None:
        """SQS calls made since the last count, into the index's stats (what the queue costs per file)."""
        calls = dict(self.queue.calls)
        delta = {f"sqs_calls_{k}": n - self._sqs_counted.get(k, 0) for k, n in calls.items()}
        self._sqs_counted = calls
        self.index.note_stats(delta)

    def _log_commit(self, end: int, records: list[dict]) -> None:
        if not records:
            return
        by = Counter(r["status"] for r in records)
        malformed = sum(r.get("malformed_rows", 0) for r in records)
        log.warning("s3-sqs: batch ending at offset %d committed with %d files quarantined, %d missing, %d malformed "
                    "rows; records in %s/%s", end, by[quarantine.QUARANTINED], by[quarantine.MISSING], malformed,
                    self.opts.quarantine_location, quarantine.batch_dir(end))
        self.index.add_stats({"files_quarantined": by[quarantine.QUARANTINED], "files_missing": by[quarantine.MISSING],
                              "rows_malformed": malformed})

    def _log_batch(self, start: int, end: int) -> None:
        c, self._since_batch = self._since_batch, Counter()
        parts = [f"{v} {k.replace('messages_', '')}" for k, v in sorted(c.items()) if k.startswith("messages_")]
        files = f"planned offsets ({start}, {end}]: {end - start} files" if end > start else "no new files"
        log.info("s3-sqs: %s; messages since the last batch: %s", files, ", ".join(parts) or "none")

    # -- reprocessing --
    def _check_reprocess(self) -> None:
        if self._reprocess_checked or not self.opts.reprocessing:
            return
        self._reprocess_checked = True
        o, idx = self.opts, self.index
        with self._lock:
            first, last = o.reprocess_start_batch_id, o.reprocess_end_batch_id
            records = idx.files_of_batches(first, last)
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
            idx.add_files([(f"{r.bucket}/{r.key}\x00{marker}", r) for r in records], {"reprocessed": len(records)},
                          {marker: u64(1)})
            self.persist()
        log.warning("s3-sqs: re-queued %d files of batches %d..%d; this run reads no new messages",
                    len(records), first, last)
