"""The SQS side of redrive-dlq: peek at a dead-letter queue, export it, and send its messages back.

Peeking (inspect, export, redrive without --apply) receives messages with a visibility timeout, so one pass sees each
message once, and makes every received message visible again before it returns, also on Ctrl-C. Redrive sends
a batch to the target first and deletes from the DLQ only what the target confirmed: an interruption can leave
a duplicate in the target (harmless, the source dedups) but never loses a message.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from typing import Callable, Iterator

from botocore.exceptions import ClientError

from ops.aws import NONEXISTENT_QUEUE, error_code, http_status
from ops.redrive import RedriveError, dlq

# A requested stop halts the work at the next batch boundary, never inside an SQS call, so no receipt handle
# is lost and nothing is half sent (the CLI requests it on the first Ctrl-C or SIGTERM).
_stop = threading.Event()


def request_stop() -> None:
    _stop.set()


def stop_requested() -> bool:
    return _stop.is_set()


def reset_stop() -> None:
    _stop.clear()


def _check_stop() -> None:
    if _stop.is_set():
        raise KeyboardInterrupt


def _sleep(seconds: float) -> None:
    """time.sleep that wakes up early when a stop is requested."""
    _stop.wait(seconds)


# ---------------------------------------------------------------- holding received messages

class Holder:
    """Receives from a queue, remembers the newest receipt handle per message id, and gives back visibility."""

    def __init__(self, sqs, url: str, visibility: int, wait_seconds: int, log: Callable[[str], None]):
        self.sqs, self.url, self.visibility, self.wait, self.log = sqs, url, visibility, wait_seconds, log
        self.handles: dict[str, str] = {}  # still invisible because of us
        self.seen: set[str] = set()

    def receive(self, n: int) -> tuple[list[dict], list[dict]]:
        """(messages not seen before, messages seen before and received again)."""
        resp = self.sqs.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=max(1, min(n, dlq.SQS_BATCH)),
            VisibilityTimeout=self.visibility, WaitTimeSeconds=self.wait,
            AttributeNames=["All"], MessageAttributeNames=["All"],
        )
        new, again = [], []
        for m in resp.get("Messages", []):
            self.handles[m["MessageId"]] = m["ReceiptHandle"]
            (again if m["MessageId"] in self.seen else new).append(m)
            self.seen.add(m["MessageId"])
        return new, again

    def forget(self, ids) -> None:
        for i in ids:
            self.handles.pop(i, None)

    def release(self, ids=None) -> int:
        """Make the given (default: all held) messages visible now. Returns how many could not be released;
        those become visible by themselves when their visibility timeout ends."""
        ids = list(self.handles) if ids is None else [i for i in ids if i in self.handles]
        failed = 0
        for start in range(0, len(ids), dlq.SQS_BATCH):
            chunk = ids[start:start + dlq.SQS_BATCH]
            entries = [{"Id": str(n), "ReceiptHandle": self.handles[i], "VisibilityTimeout": 0} for n, i in enumerate(chunk)]
            try:
                resp = self.sqs.change_message_visibility_batch(QueueUrl=self.url, Entries=entries)
                failed += len(resp.get("Failed", []))
            except Exception as e:  # best effort: never mask the error that got us here
                failed += len(chunk)
                self.log(f"could not release {len(chunk)} messages ({e}); they reappear after {self.visibility}s")
            self.forget(chunk)
        return failed


def scan(holder: Holder, limit: int | None = None, batch: int = dlq.SQS_BATCH) -> Iterator[list[dict]]:
    """Yield batches of messages not seen before, until `limit` or until receives bring nothing new.

    Stops after two empty receives, or after enough receives of only already-seen messages to have cycled
    through everything held (they come back when a long pass outlives their visibility timeout)."""
    count = empty = stale = 0
    while limit is None or count < limit:
        _check_stop()
        want = batch if limit is None else min(batch, limit - count)
        new, again = holder.receive(want)
        if not new and not again:
            empty += 1
            if empty >= 2:
                return
            continue
        empty = 0
        if not new:
            stale += 1
            if stale > len(holder.handles) // dlq.SQS_BATCH + 3:
                return
            continue
        stale = 0
        count += len(new)
        yield new


# ---------------------------------------------------------------- queue facts

def queue_attributes(sqs, url: str, flag: str) -> dict:
    try:
        return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    except ClientError as e:
        if error_code(e) in NONEXISTENT_QUEUE:
            raise RedriveError(f"{flag} {url}: queue does not exist") from None
        raise RedriveError(f"{flag} {url}: {error_code(e) or e}: {e}") from None


def source_queues(sqs, dlq_url: str) -> list[str]:
    urls: list[str] = []
    for page in sqs.get_paginator("list_dead_letter_source_queues").paginate(QueueUrl=dlq_url):
        urls.extend(page.get("queueUrls", []))
    return urls


def resolve_target(sqs, dlq_url: str, to: str | None, preferred: str | None = None) -> str:
    if to:
        if to.rstrip("/") == dlq_url.rstrip("/"):
            raise RedriveError("--to-queue-url is the DLQ itself; name the queue the messages should go back to")
        queue_attributes(sqs, to, "--to-queue-url")
        return to
    sources = source_queues(sqs, dlq_url)
    if len(sources) == 1:
        return sources[0]
    if preferred and preferred in sources:
        return preferred
    if not sources:
        raise RedriveError(
            "no queue names this DLQ in its RedrivePolicy (ListDeadLetterSourceQueues is empty); pass --to-queue-url URL"
        )
    raise RedriveError(f"this DLQ serves {len(sources)} queues ({', '.join(sources)}); choose one with --to-queue-url URL")


def _depth(sqs, url: str) -> tuple[int, int]:
    """(visible, hidden) message counts, as SQS approximates them."""
    a = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(a.get("ApproximateNumberOfMessages", 0)), int(a.get("ApproximateNumberOfMessagesNotVisible", 0))


def _warn_dlq_redrive_policy(attrs: dict, log) -> None:
    if attrs.get("RedrivePolicy"):
        log("warning: this DLQ has its own RedrivePolicy; every peek counts as a receive and may move messages on")


# ---------------------------------------------------------------- inspect

def peek(sqs, url: str, limit: int | None, visibility: int, wait_seconds: int = 1, on_message=None, *,
         log: Callable[[str], None]) -> tuple[list[dlq.Decoded], int]:
    """Receive up to `limit` distinct messages, then make all of them visible again."""
    holder = Holder(sqs, url, visibility, wait_seconds, log)
    decoded: list[dlq.Decoded] = []
    try:
        for batch in scan(holder, limit):
            for m in batch:
                d = dlq.decode_message(m)
                decoded.append(d)
                if on_message:
                    on_message(m, d)
    finally:
        failures = holder.release()
    return decoded, failures


def inspect(sqs, dlq_url: str, sample: int, visibility: int, wait_seconds: int = 1, *,
            log: Callable[[str], None]) -> dlq.Inspection:
    attrs = queue_attributes(sqs, dlq_url, "--dlq-url")
    _warn_dlq_redrive_policy(attrs, log)
    sources = source_queues(sqs, dlq_url)
    decoded, failures = peek(sqs, dlq_url, sample, visibility, wait_seconds, log=log)
    return dlq.Inspection(
        visible=int(attrs.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0)),
        delayed=int(attrs.get("ApproximateNumberOfMessagesDelayed", 0)),
        sources=sources, decoded=decoded, released_failures=failures,
    )


# ---------------------------------------------------------------- export

def export(sqs, dlq_url: str, path: str, visibility: int, limit: int | None, overwrite: bool,
           wait_seconds: int = 1, *, log: Callable[[str], None]) -> int:
    if os.path.exists(path) and not overwrite:
        raise RedriveError(f"--to-file {path} exists; choose another file or pass --overwrite")
    attrs = queue_attributes(sqs, dlq_url, "--dlq-url")
    _warn_dlq_redrive_policy(attrs, log)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise RedriveError(f"--to-file {path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".export-", suffix=".jsonl", dir=directory)
    n = 0
    try:
        with os.fdopen(fd, "w") as fh:
            def write(m, d):
                nonlocal n
                fh.write(json.dumps(dlq.export_record(m, d)) + "\n")
                n += 1
                if n % 100 == 0:
                    log(f"exported {n} messages")
            _, failures = peek(sqs, dlq_url, limit, visibility, wait_seconds, on_message=write, log=log)
        os.replace(tmp, path)  # the audit copy appears complete or not at all
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if failures:
        log(f"warning: {failures} messages could not be made visible at once; they reappear after {visibility}s")
    return n


# ---------------------------------------------------------------- redrive

def _move_task(sqs, dlq_arn: str, dest_arn: str | None, rate: float | None, log) -> dlq.RedriveResult | None:
    """Move everything with StartMessageMoveTask and watch it. None when the API is not available here."""
    try:
        running = [t for t in sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=1).get("Results", [])
                   if t.get("Status") == "RUNNING"]
        if running:
            task = running[0]
            log(f"a move task is already running for this DLQ ({task.get('TaskHandle', '?')}); watching it")
        else:
            kw = {"SourceArn": dlq_arn}
            if dest_arn:
                kw["DestinationArn"] = dest_arn
            if rate:
                kw["MaxNumberOfMessagesPerSecond"] = max(1, min(500, int(rate)))
            handle = sqs.start_message_move_task(**kw)["TaskHandle"]
            log(f"started move task {handle}")
    except ClientError as e:
        reason = dlq.move_task_unsupported(http_status(e), error_code(e))
        if reason:
            log(f"StartMessageMoveTask: {reason}; falling back to send-then-delete")
            return None
        raise
    result = dlq.RedriveResult("StartMessageMoveTask", dest_arn or "the original source queues")
    try:
        while True:
            tasks = sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=1).get("Results", [])
            t = tasks[0] if tasks else {}
            result.moved = int(t.get("ApproximateNumberOfMessagesMoved", 0))
            total = t.get("ApproximateNumberOfMessagesToMove")
            log(f"move task {t.get('Status', '?')}: moved {result.moved}" + (f" of ~{total}" if total is not None else ""))
            if t.get("Status") in ("COMPLETED", "CANCELLED", "FAILED") or not t:
                if t.get("Status") == "FAILED":
                    raise RedriveError(f"the move task failed: {t.get('FailureReason', 'no reason given')}; "
                                       "messages not moved are still in the DLQ")
                if t.get("Status") == "CANCELLED":
                    result.notes.append("the move task was cancelled; messages not moved are still in the DLQ")
                return result
            _sleep(2)
            _check_stop()
    except KeyboardInterrupt:
        log("stopped watching; the move task keeps running in SQS. Re-run to watch it again, or cancel it with "
            "`aws sqs cancel-message-move-task --task-handle <handle>`")
        raise


def redrive(sqs, dlq_url: str, target: str, *, key_glob: str | None = None, max_messages: int | None = None,
            rate: float | None = None, dry_run: bool = False, visibility: int = 30, use_move_task: bool = True,
            wait_seconds: int = 1, log: Callable[[str], None], progress_every: float = 1.0) -> dlq.RedriveResult:
    dlq_attrs = queue_attributes(sqs, dlq_url, "--dlq-url")
    target_attrs = queue_attributes(sqs, target, "--to-queue-url")
    _warn_dlq_redrive_policy(dlq_attrs, log)
    fifo = target.endswith(".fifo")
    if fifo != dlq_url.endswith(".fifo"):
        raise RedriveError("the DLQ and the target must both be FIFO queues or both standard queues")
    unfiltered = key_glob is None and max_messages is None

    if dry_run:
        return _dry_run(sqs, dlq_url, target, key_glob, max_messages, visibility, wait_seconds,
                        unfiltered and use_move_task, log)

    log(f"DLQ holds ~{int(dlq_attrs.get('ApproximateNumberOfMessages', 0))} visible messages; target {target}")
    # The move task takes whole messages per second; below 1/s only send-then-delete can keep the rate.
    if unfiltered and use_move_task and (rate is None or rate >= 1):
        moved = _move_task(sqs, dlq_attrs["QueueArn"], target_attrs["QueueArn"], rate, log)
        if moved is not None:
            return moved
    mover = _SendThenDelete(sqs, dlq_url, target, fifo, Holder(sqs, dlq_url, visibility, wait_seconds, log), log)
    return mover.run(key_glob, max_messages, rate, progress_every)


def _dry_run(sqs, dlq_url: str, target: str, key_glob: str | None, max_messages: int | None, visibility: int,
             wait_seconds: int, may_use_move_task: bool, log) -> dlq.RedriveResult:
    """What a redrive would move, counted on a peek that changes nothing."""
    decoded, _ = peek(sqs, dlq_url, max_messages if key_glob is None else None, visibility, wait_seconds, log=log)
    result = dlq.RedriveResult("dry run", target)
    for d in decoded:
        if dlq.wanted(d, key_glob, max_messages, result.matched):
            result.matched += 1
        else:
            result.skipped += 1
    how = "StartMessageMoveTask (if available), else send-then-delete" if may_use_move_task else "send-then-delete"
    result.notes.append(f"would move {result.matched} messages to {target} with {how}; nothing was changed")
    return result


class _SendThenDelete:
    """A redrive batch by batch: send to the target, then delete from the DLQ only what the target confirmed."""

    def __init__(self, sqs, dlq_url: str, target: str, fifo: bool, holder: Holder, log: Callable[[str], None]):
        self.sqs, self.dlq_url, self.target, self.fifo, self.holder, self.log = sqs, dlq_url, target, fifo, holder, log
        self.result = dlq.RedriveResult("send-then-delete", target)
        self.sent_undeleted: dict[str, str] = {}  # message id -> receipt handle, confirmed in the target
        self.wait_until: float | None = None

    def run(self, key_glob: str | None, max_messages: int | None, rate: float | None,
            progress_every: float) -> dlq.RedriveResult:
        pacer = dlq.Pacer(rate, sleep=_sleep)
        progress = dlq.Progress(self.log, progress_every)
        batch = dlq.batch_size_for(rate)
        try:
            while True:
                self._pass(key_glob, max_messages, batch, pacer, progress)
                if self._enough(max_messages) or not self._look_again():
                    break
                _check_stop()
        finally:
            # Interrupted or done: drop what is already in the target, give everything else back.
            try:
                if self.sent_undeleted:
                    self._delete()
            except Exception as e:
                self.log(f"could not delete {len(self.sent_undeleted)} already-sent messages ({e}); the next run "
                         "re-sends them")
            finally:
                self.holder.release()
                progress(self.result, force=True)
        return self.result

    def _enough(self, max_messages: int | None) -> bool:
        return max_messages is not None and self.result.matched >= max_messages

    def _pass(self, key_glob: str | None, max_messages: int | None, batch: int, pacer, progress) -> None:
        """One look through the DLQ: every message not seen before, sent when wanted, else held until the end."""
        for msgs in scan(self.holder, None, batch):
            todo = []
            for m in msgs:
                d = dlq.decode_message(m)
                if dlq.wanted(d, key_glob, max_messages, self.result.matched):
                    self.result.matched += 1
                    todo.append(m)
                else:
                    self.result.skipped += 1  # stays held until the pass ends, then made visible again
            if todo:
                self._send(todo, pacer)
            progress(self.result)
            if self._enough(max_messages):
                return
            _check_stop()

    def _look_again(self) -> bool:
        """Whether another pass is due. Messages hidden by someone else, typically a run that was killed, come
        back when their visibility timeout ends, so wait about one timeout for them rather than leave them
        behind; also look again if some turned visible just as the pass ended."""
        visible, hidden = _depth(self.sqs, self.dlq_url)
        others = hidden - len(self.holder.handles)
        if others <= 0 and visible <= 0:
            return False
        now = time.monotonic()
        if self.wait_until is None:
            self.wait_until = now + self.holder.visibility + 5
            if others > 0:
                self.log(f"{others} messages in the DLQ are hidden by another reader (a killed earlier run?); "
                         f"waiting up to {self.holder.visibility + 5}s for them to reappear")
        if now >= self.wait_until:
            if others > 0:
                # SQS's counts are approximate and lag, so this is a warning, not a failure.
                self.result.notes.append(
                    f"warning: SQS still counts ~{others} hidden messages in the DLQ, which this run could not "
                    "look at; if they are real, run again once they are visible"
                )
                self.result.in_flight_left = others
            return False
        if visible <= 0:
            _sleep(2)
        return True

    def _send(self, msgs: list[dict], pacer) -> None:
        by_entry = {str(i): m for i, m in enumerate(msgs)}
        pacer.before_send(len(msgs))
        _check_stop()  # asked to stop while pacing: these are not sent, and go back to the DLQ's view
        resp = _send_batch(self.sqs, self.target, [dlq.send_entry(m, i, self.fifo) for i, m in by_entry.items()])
        for f in resp.get("Failed", []):
            m = by_entry[f["Id"]]
            self.result.send_failed += 1
            self.log(f"target refused message {m['MessageId']}: {f.get('Code')}: {f.get('Message')}; it stays in "
                     "the DLQ")
            self.holder.release([m["MessageId"]])
        for ok in resp.get("Successful", []):
            m = by_entry[ok["Id"]]
            self.sent_undeleted[m["MessageId"]] = self.holder.handles.get(m["MessageId"], m["ReceiptHandle"])
        self._delete()

    def _delete(self) -> None:
        ids = list(self.sent_undeleted)
        for start in range(0, len(ids), dlq.SQS_BATCH):
            chunk = ids[start:start + dlq.SQS_BATCH]
            entries = [{"Id": str(n), "ReceiptHandle": self.sent_undeleted[i]} for n, i in enumerate(chunk)]
            resp = self.sqs.delete_message_batch(QueueUrl=self.dlq_url, Entries=entries)
            failed = {chunk[int(f["Id"])] for f in resp.get("Failed", [])}
            for i in chunk:
                self.sent_undeleted.pop(i, None)
                self.holder.forget([i])
                if i in failed:
                    self.result.delete_failed += 1
                else:
                    self.result.moved += 1
            if failed:
                self.log(f"{len(failed)} messages reached the target but could not be deleted from the DLQ; "
                         "a later run sends them again (a harmless duplicate)")


def _send_batch(sqs, target: str, entries: list[dict]) -> dict:
    """SendMessageBatch; a batch over the request size limit is sent in halves instead."""
    try:
        return sqs.send_message_batch(QueueUrl=target, Entries=entries)
    except ClientError as e:
        if "BatchRequestTooLong" not in error_code(e) or len(entries) == 1:
            raise
    half = len(entries) // 2
    first, second = _send_batch(sqs, target, entries[:half]), _send_batch(sqs, target, entries[half:])
    return {k: first.get(k, []) + second.get(k, []) for k in ("Successful", "Failed")}
