"""The SQS side: parallel long-poll receive, batch delete, and keeping in-flight messages invisible.

Retries come from botocore's retry modes (sqs.maxRetries), not from loops of our own.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import boto3
from botocore.config import Config

log = logging.getLogger("s3sqs.queue")
HOLD = 1 << 62  # a ceiling no commit reaches: held until planned


@dataclass
class Message:
    message_id: str
    receipt_handle: str
    body: str
    receive_count: int
    received_at: float


def sqs_client(region: str | None, endpoint_url: str | None, max_retries: int, max_concurrency: int):
    config = Config(
        retries={"max_attempts": max_retries + 1, "mode": "standard"},
        max_pool_connections=max(10, max_concurrency),
        connect_timeout=10,
        read_timeout=40,  # longer than the longest long poll (20 s)
    )
    return boto3.session.Session().client("sqs", region_name=region, endpoint_url=endpoint_url, config=config)


class QueueClient:
    def __init__(self, client, queue_url: str, visibility_timeout: int, long_poll_seconds: int,
                 max_concurrency: int):
        self.client = client
        self.queue_url = queue_url
        self.visibility_timeout = visibility_timeout
        self.long_poll_seconds = long_poll_seconds
        self.max_concurrency = max_concurrency
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="s3sqs-sqs")

    def receive(self, want: int | None, timeout_seconds: float, long_poll_first: bool = True) -> list[Message]:
        """Up to `want` messages (None: as many as arrive), in parallel long polls.

        Stops when enough arrived, when the time is up, or when a round of polls comes back empty.
        """
        deadline = time.monotonic() + timeout_seconds
        got: dict[str, Message] = {}
        first = long_poll_first
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (want is not None and len(got) >= want):
                break
            need = (want - len(got)) if want is not None else self.max_concurrency * 10
            polls = max(1, min(self.max_concurrency, -(-need // 10)))
            # The first round waits the full long poll; follow-up rounds only catch stragglers.
            wait = min(self.long_poll_seconds if first else 1, int(remaining))
            first = False
            rounds = list(self._pool.map(lambda _: self._receive_once(wait), range(polls)))
            fresh = [m for batch in rounds for m in batch if m.message_id not in got]
            for m in fresh:
                got[m.message_id] = m
            if not fresh:
                break
        return list(got.values())

    def _receive_once(self, wait: int) -> list[Message]:
        resp = self.client.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=max(0, wait),
            VisibilityTimeout=self.visibility_timeout,
            MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
        )
        now = time.monotonic()
        return [
            Message(m["MessageId"], m["ReceiptHandle"], m.get("Body", ""),
                    int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")), now)
            for m in resp.get("Messages", [])
        ]

    def delete(self, messages: list[Message]) -> list[Message]:
        """Delete in batches of 10, in parallel. Returns the messages that could not be deleted."""
        chunks = [messages[i:i + 10] for i in range(0, len(messages), 10)]
        failed: list[Message] = []
        for chunk_failed in self._pool.map(self._delete_chunk, chunks):
            failed.extend(chunk_failed)
        return failed

    def _delete_chunk(self, chunk: list[Message]) -> list[Message]:
        entries = [{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(chunk)]
        resp = self.client.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        failed = [chunk[int(f["Id"])] for f in resp.get("Failed", [])]
        for f in resp.get("Failed", []):
            # A stale receipt handle (the message was received again) is harmless: the newer copy
            # dedups against the index and is deleted then.
            log.warning("s3-sqs: could not delete message %s: %s %s", chunk[int(f["Id"])].message_id,
                        f.get("Code"), f.get("Message"))
        return failed

    def extend_visibility(self, messages: list[Message]) -> None:
        for i in range(0, len(messages), 10):
            chunk = messages[i:i + 10]
            entries = [{"Id": str(j), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": self.visibility_timeout}
                       for j, m in enumerate(chunk)]
            resp = self.client.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
            now = time.monotonic()
            failed = {int(f["Id"]) for f in resp.get("Failed", [])}
            for j, m in enumerate(chunk):
                if j not in failed:
                    m.received_at = now
            if failed:
                log.warning("s3-sqs: could not extend visibility of %d messages (received again elsewhere?)",
                            len(failed))

    def depth(self) -> dict[str, int]:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                 "ApproximateNumberOfMessagesDelayed"]
        attrs = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=names)["Attributes"]
        return {n: int(attrs.get(n, 0)) for n in names}


class InFlight:
    """Messages received but not yet deletable, each with the highest seq its files got.

    A message may be deleted once the committed offset reaches its ceiling. A background thread
    keeps the rest invisible, so slow batches do not push them towards the dead-letter queue.
    """

    def __init__(self, queue: QueueClient):
        self.queue = queue
        self._lock = threading.Lock()
        self._by_id: dict[str, tuple[int, Message]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, message: Message, ceiling: int) -> None:
        with self._lock:
            self._by_id[message.message_id] = (ceiling, message)
        self._ensure_heartbeat()

    def hold(self, messages: list[Message]) -> None:
        """Keep received-but-not-yet-planned messages invisible too."""
        for m in messages:
            self.add(m, HOLD)

    def discard(self, messages: list[Message]) -> None:
        with self._lock:
            for m in messages:
                self._by_id.pop(m.message_id, None)

    def release(self, committed: int) -> list[Message]:
        """Remove and return the messages whose files are all committed."""
        with self._lock:
            done = [mid for mid, (c, _) in self._by_id.items() if c <= committed]
            return [self._by_id.pop(mid)[1] for mid in done]

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)

    def _ensure_heartbeat(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._heartbeat, name="s3sqs-visibility", daemon=True)
            self._thread.start()

    def _heartbeat(self) -> None:
        vt = self.queue.visibility_timeout
        while not self._stop.wait(max(0.5, vt / 4)):
            cutoff = time.monotonic() - vt / 2
            with self._lock:
                due = [m for _, m in self._by_id.values() if m.received_at < cutoff]
            if due:
                try:
                    self.queue.extend_visibility(due)
                except Exception:  # keep the thread alive; the next beat retries
                    log.exception("s3-sqs: extending message visibility failed")
