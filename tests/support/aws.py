"""Small AWS set-ups on the moto server for source tests: a bucket announcing into a queue."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import boto3

from devtools.local_aws import announce_to_queue


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

    def depth(self) -> int:
        a = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["All"])["Attributes"]
        return sum(int(a[k]) for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                                       "ApproximateNumberOfMessagesDelayed"))

    def send_raw(self, body: str) -> None:
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)


def bucket_to_queue(endpoint: str, max_receive_count: int = 5) -> Wiring:
    """A fresh bucket whose ObjectCreated events go straight to a fresh queue with a DLQ."""
    s3, sqs = clients(endpoint)
    name = f"t-{uuid.uuid4().hex[:10]}"
    q, dlq = announce_to_queue(s3, sqs, name, max_receive_count)
    # moto sends an s3:TestEvent on configuration; leave it: the source must skip it.
    return Wiring(endpoint, name, q, dlq, s3, sqs)
