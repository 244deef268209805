"""The intake: one background thread that receives rounds of messages and records their new files in the
ledger; one more thread, off its path, makes them durable (a snapshot) and only then deletes the messages.
The snapshot's writes overlap the next round's receiving and parsing, and a snapshot taken meanwhile (a plan
takes one) covers several rounds at once. Once a file is durable in the index it no longer needs its
message, so a failing batch never pushes good files' messages towards the dead-letter queue. How wide and
how far ahead it receives is intake_pacing's to say."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from ..config.source_options import SourceOptions
from ..core import counters
from ..core.counters import Stat
from ..core.units import now_ms
from . import batch_limits, fates, intake_pacing
from .events import MessageParseError, ParsedBody, parse_body
from .ledger import Ledger
from .queue import Message, QueueClient, sent_after

log = logging.getLogger("s3sqs")
FIRST_ROUND_WAIT_SECONDS = 0  # the first receive does not wait, so the first batch comes quickly
DRAIN_WAIT_SECONDS = 1        # ... but "the queue is empty" is only believed after a real (long) poll


class Intake:
    def __init__(self, opts: SourceOptions, ledger: Ledger, queue: QueueClient):
        self.opts, self.ledger, self.queue = opts, ledger, queue
        self.error: BaseException | None = None
        self.caught_up = threading.Event()  # the queue ran dry, or a batch's worth is recorded
        self.room = threading.Event()       # planning made room for more
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._deleter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s3sqs-delete")
        self._calls_counted: dict[str, int] = {}

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="s3sqs-intake", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Messages of the receive under way when stopping are made visible again (not recorded)."""
        self.stopping.set()
        self.room.set()
        if self._thread is not None:
            self._thread.join(self.opts.long_poll_wait_seconds + 30)
        self._deleter.shutdown(wait=True)

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        polls, first = 1, True
        try:
            while not self.stopping.is_set() and self.error is None:
                room = intake_pacing.intake_room(self._pending(), self.opts.max_files_per_trigger, self.opts.latest_first)
                if room == 0:
                    self.caught_up.set()
                    self.room.wait(1)
                    self.room.clear()
                    continue
                polls = intake_pacing.polls_for(room, polls)
                wait = FIRST_ROUND_WAIT_SECONDS if first else intake_pacing.poll_wait(polls, self.opts.long_poll_wait_seconds)
                first = False
                msgs = self.queue.receive_round(polls, wait)
                if self.stopping.is_set():
                    self._release(msgs)
                    break
                self.ingest(msgs)
                if batch_limits.batch_full(self._pending(), self.opts.max_files_per_trigger) \
                        or len(msgs) < polls * intake_pacing.SQS_BATCH:
                    self.caught_up.set()
                polls = intake_pacing.next_polls(polls, len(msgs), self.opts.max_concurrency)
        except BaseException as e:  # the next offset call raises it: the query fails, naming the cause
            if self.stopping.is_set():
                log.info("s3-sqs: the intake stopped: %s", e)
                return
            log.error("s3-sqs: reading the queue failed: %s: %s", type(e).__name__, e)
            self.error = e

    def _release(self, messages: list[Message]) -> None:
        if not messages:
            return
        try:
            self.queue.release(messages)
            log.info("s3-sqs: stopping: %d messages received and not recorded are visible again", len(messages))
        except Exception as e:  # they come back after their visibility timeout instead
            log.warning("s3-sqs: stopping: %d messages received and not recorded will be visible again after "
                        "their visibility timeout (%s: %s)", len(messages), type(e).__name__, e)

    def _pending(self) -> int:
        with self.ledger.lock:
            return self.ledger.index.last_seq - self.ledger.index.planned_end

    def drain(self) -> None:
        """Receive until the queue is empty, or holds only messages sent after this call (AvailableNow)."""
        started, polls = now_ms(), 1
        while True:
            msgs = self.queue.receive_round(polls, DRAIN_WAIT_SECONDS)
            self.ingest(msgs)
            if not msgs or all(sent_after(m, started) for m in msgs):
                return
            polls = intake_pacing.next_polls(polls, len(msgs), self.opts.max_concurrency)

    def ingest(self, messages: list[Message]) -> None:
        """Decide and record new files; then, off this thread, make them durable and delete the messages
        that are settled."""
        if not messages:
            return
        o = self.opts
        bodies = [self._parse(m) for m in messages]
        with self.ledger.lock:
            r = fates.plan_round(bodies, self.ledger.index.seq_of, datetime.now(timezone.utc),
                                   o.max_file_age_seconds, o.path_glob_filter, o.allow_overwrites,
                                   o.keep_message_for_consumer_error)
            self.ledger.record(r.new_files, r.counts, announced=True, durable=False)
        for d in r.skipped:
            log.info("s3-sqs: skipping %s (%s)", d.file.uri, d.outcome)
        if log.isEnabledFor(logging.DEBUG):
            for m, fate, keep in zip(messages, r.fates, r.keep):
                log.debug("s3-sqs: message %s: %s; %s", m.message_id, fate,
                          "left for the dead-letter queue" if keep else "deleted")
        # One thread, in order: a round's messages (its duplicates' too) go only after every earlier round's
        # files are durable. A message whose delete is lost to a crash comes back and dedups.
        self._deleter.submit(self._settle, [m for m, keep in zip(messages, r.keep) if not keep], bool(r.new_files))

    def _settle(self, messages: list[Message], recorded: bool) -> None:
        if self.error is not None:  # an earlier round may not be durable: its messages and later ones stay
            return
        try:
            if recorded and not self.ledger.persist_unless_sealed():
                return  # the process is ending: the messages come back to the next run, after their timeout
        except BaseException as e:  # the next offset call raises it: the query fails, naming the cause
            log.error("s3-sqs: saving the state failed: %s: %s", type(e).__name__, e)
            self.error = e
            return
        self._delete(messages)

    def _delete(self, messages: list[Message]) -> None:
        try:
            failed = self.queue.delete(messages)
        except Exception as e:  # they come back after their visibility timeout and dedup then
            log.warning("s3-sqs: deleting %d settled messages failed (%s: %s); they will be received again and "
                        "ignored as duplicates", len(messages), type(e).__name__, e)
            failed = messages
        if failed:
            self.ledger.record([], {Stat.MESSAGES_NOT_DELETED: len(failed)})

    def _parse(self, m: Message) -> ParsedBody | None:
        try:
            return parse_body(m.body)
        except MessageParseError as e:
            action = "left for the dead-letter queue" if self.opts.keep_message_for_consumer_error else "deleted"
            log.error("s3-sqs: message %s cannot be parsed (%s); %s. Body starts: %r",
                      m.message_id, e, action, m.body[:300])
            return None

    def calls_since_last(self) -> dict[str, int]:
        """SQS calls made since the last call of this, by counter name: what the queue costs per file."""
        calls = dict(self.queue.calls)
        delta = {counters.sqs_calls(k): n - self._calls_counted.get(k, 0) for k, n in calls.items()}
        self._calls_counted = calls
        return delta
