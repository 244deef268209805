"""Shared helpers for the operator-tool tests: accounts on the moto server, CLI runs, queue draining."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import boto3

REPO = Path(__file__).resolve().parents[2]
OWNER = "222222222222"  # data-owner account
CONSUMER = "111111111111"  # consumer account
STRANGER = "333333333333"  # someone whose statements must survive


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def account_credentials(endpoint: str, account: str) -> dict:
    """Credentials for `account`: moto maps an assumed role's keys to the role's account."""
    sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1")
    c = sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/operator", RoleSessionName="tests")["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": c["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
        "AWS_SESSION_TOKEN": c["SessionToken"],
    }


def session_for(endpoint: str, account: str) -> boto3.session.Session:
    c = account_credentials(endpoint, account)
    return boto3.session.Session(
        aws_access_key_id=c["AWS_ACCESS_KEY_ID"], aws_secret_access_key=c["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=c["AWS_SESSION_TOKEN"], region_name="us-east-1",
    )


def run_script(name: str, *args: str, env: dict | None = None, timeout: float = 60,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed command <name> (.venv/bin/<name>); by default in an empty directory, so a cdk.json or
    cdk-outputs.json lying in the checkout (`make local-stack` writes one) never changes what a test sees."""
    with tempfile.TemporaryDirectory(prefix="ops-cwd-") as empty:
        return subprocess.run(
            [str(Path(sys.executable).parent / name), *args],
            capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd or empty,
        )


def s3_event(key: str, bucket: str = "source-data", when: str = "2026-11-20T08:00:00.000Z") -> str:
    from urllib.parse import quote_plus
    return json.dumps({"Records": [{
        "eventVersion": "2.1", "eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "eventTime": when,
        "s3": {"bucket": {"name": bucket}, "object": {"key": quote_plus(key, safe="/"), "size": 10}},
    }]})


def drain(sqs, url: str) -> list[dict]:
    """Receive and delete everything in a queue; returns the messages (duplicates included)."""
    out: list[dict] = []
    empty = 0
    while empty < 2:
        msgs = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=60,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not msgs:
            empty += 1
            continue
        empty = 0
        out.extend(msgs)
        sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)
        ])
    return out


def counts(sqs, url: str) -> tuple[int, int]:
    a = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])
