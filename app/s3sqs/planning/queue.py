"""The SQS side: rounds of parallel long-poll receives, batch deletes, and the queue's depth.

Retries come from botocore's retry modes (sqs.maxRetries), not from loops of our own. Every call is
counted, so a run can report what it cost per file.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..core import aws
from ..core.endpoint import Endpoint
from .intake_pacing import SQS_BATCH as BATCH

log = logging.getLogger("s3sqs.queue")


@dataclass
class Message:
    message_id: str
    receipt_handle: str
    body: str
    receive_count: int
    sent_ms: int | None


def sqs_client(endpoint: Endpoint, max_concurrency: int):
    # The read timeout is longer than the longest long poll (20 s).
    return aws.client("sqs", endpoint, pool=max(10, max_concurrency), connect_timeout=10, read_timeout=40)


class QueueClient:
    def __init__(self, client, queue_url: str, visibility_timeout: int, max_concurrency: int,
                 parallel_deletes: bool = True):
        self.client = client
        # The local stand-in (moto) loses one of two deletes that reach it at the same moment, and the
        # message comes back a visibility timeout later; against another endpoint, delete one batch at a time.
        self.parallel_deletes = parallel_deletes
        self.queue_url = queue_url
        self.visibility_timeout = visibility_timeout
        self.calls: Counter = Counter()  # SQS API calls made, by name
        self._calls_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="s3sqs-sqs")

    def receive_round(self, polls: int, wait_seconds: int) -> list[Message]:
        """`polls` receives of up to 10 messages each, in parallel. A long poll returns as soon as any
        message is there, so a round takes as long as the queue is empty, at most `wait_seconds`."""
        rounds = list(self._pool.map(lambda _: self._receive_once(wait_seconds), range(max(1, polls))))
        got: dict[str, Message] = {}
        for m in (m for batch in rounds for m in batch):
            got.setdefault(m.message_id, m)
        return list(got.values())

    def _receive_once(self, wait: int) -> list[Message]:
        resp = self.client.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=BATCH, WaitTimeSeconds=max(0, wait),
            VisibilityTimeout=self.visibility_timeout,
            MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
        )
        self._count("ReceiveMessage")
        return [
            Message(m["MessageId"], m["ReceiptHandle"], m.get("Body", ""),
                    int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
                    _int_or_none(m.get("Attributes", {}).get("SentTimestamp")))
            for m in resp.get("Messages", [])
        ]

    def delete(self, messages: list[Message]) -> list[Message]:
        """Delete in batches of 10, in parallel. Returns the messages that could not be deleted."""
        chunks = [messages[i:i + BATCH] for i in range(0, len(messages), BATCH)]
        failed: list[Message] = []
        results = self._pool.map(self._delete_chunk, chunks) if self.parallel_deletes else map(self._delete_chunk, chunks)
        for chunk_failed in results:
            failed.extend(chunk_failed)
        return failed

    def _delete_chunk(self, chunk: list[Message]) -> list[Message]:
        entries = [{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(chunk)]
        resp = self.client.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        self._count("DeleteMessageBatch")
        failed = [chunk[int(f["Id"])] for f in resp.get("Failed", [])]
        for f in resp.get("Failed", []):
            # A stale receipt handle (the message was received again) is harmless: the newer copy
            # dedups against the index and is deleted then.
            log.warning("s3-sqs: could not delete message %s: %s %s", chunk[int(f["Id"])].message_id,
                        f.get("Code"), f.get("Message"))
        return failed

    def release(self, messages: list[Message]) -> None:
        """Make received messages visible again now, instead of after their visibility timeout: a source that
        stops hands the ones it has not recorded to the next run at once."""
        for i in range(0, len(messages), BATCH):
            chunk = messages[i:i + BATCH]
            entries = [{"Id": str(j), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": 0}
                       for j, m in enumerate(chunk)]
            self.client.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
            self._count("ChangeMessageVisibilityBatch")

    def depth(self) -> dict[str, int]:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                 "ApproximateNumberOfMessagesDelayed"]
        attrs = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=names)["Attributes"]
        self._count("GetQueueAttributes")
        return {n: int(attrs.get(n, 0)) for n in names}

    def _count(self, name: str) -> None:
        with self._calls_lock:
            self.calls[name] += 1


def _int_or_none(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def sent_after(m: Message, t_ms: int) -> bool:
    return m.sent_ms is not None and m.sent_ms > t_ms
