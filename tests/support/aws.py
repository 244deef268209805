"""AWS set-ups on the moto server for source tests: a copy of the stack's own wiring (bucket -> SNS -> queue
with its DLQ) per test, named uniquely."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import boto3

from devtools.local_aws import wire_consumer


def clients(endpoint: str):
    kw = dict(endpoint_url=endpoint, region_name="us-east-1")
    return boto3.client("s3", **kw), boto3.client("sqs", **kw)


@dataclass
class Wiring:
    endpoint: str
    bucket: str
    queue_url: str
    dlq_url: str
    s3: object
    sqs: object

    def put(self, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)

    def put_many(self, objects: dict[str, bytes]) -> None:
        """Many uploads at once (the moto server answers requests in parallel; each upload also publishes
        its event, so one at a time they take about a tenth of a second each)."""
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda kv: self.put(*kv), objects.items()))

    def depth(self) -> int:
        a = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["All"])["Attributes"]
        return sum(int(a[k]) for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                                       "ApproximateNumberOfMessagesDelayed"))

    def send_raw(self, body: str) -> None:
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)


def bucket_to_queue(endpoint: str, max_receive_count: int | None = None) -> Wiring:
    """A fresh source bucket whose ObjectCreated events reach a fresh consumer queue (with its DLQ) through the
    fan-out topic, as the deployed stack wires them."""
    s3, sqs = clients(endpoint)
    path = wire_consumer(endpoint, f"t-{uuid.uuid4().hex[:10]}", max_receive_count)
    return Wiring(endpoint, path.bucket, path.queue_url, path.dlq_url, s3, sqs)
