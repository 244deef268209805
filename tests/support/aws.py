"""Small AWS set-ups on the moto server for source tests: a bucket announcing into a queue."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import boto3


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
    s3.create_bucket(Bucket=name)
    dlq = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    import json
    q = sqs.create_queue(QueueName=name, Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)})})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=q, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_bucket_notification_configuration(Bucket=name, NotificationConfiguration={
        "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]})
    # moto sends an s3:TestEvent on configuration; leave it: the source must skip it.
    return Wiring(endpoint, name, q, dlq, s3, sqs)
